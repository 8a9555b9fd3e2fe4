/**
 * kafkajs patch 5 — the record encoder (CPU, garbage).
 *
 * kafkajs 2.2.4 encodes each produced record (`src/protocol/recordBatch/record/v0/index.js:25-48`)
 * through a fresh zero-filled 512-byte Encoder plus one per header and a temporary Buffer per
 * varint, with 64-bit `Long` emulation for the timestamp delta; in bench:processing's CPU profile
 * that was the largest kafkajs item after request encoding. `../record-encoder.ts` (which says
 * how) writes the same bytes into one exact-size buffer; it replaces the file that
 * `recordBatch/v0/index.js` requires. Measured in bench:processing: wordcount 8.0–8.3k →
 * 10.0–10.6k lines/s, the bare kafkajs consume→produce loop 17–21k → 29k.
 *
 * The check is by identity: the bytes are the same by design (a property test compares them), so
 * the only observable is which function RecordBatch got from the module cache.
 */
import { encodeRecord } from '../record-encoder.js';
import { isKafkajsFileReplaced, type KafkajsPatch, patchNotInPlace, replaceKafkajsFile } from './kafkajs-patch.js';

const FILE = 'kafkajs/src/protocol/recordBatch/record/v0/index.js';

export const recordEncoderPatch: KafkajsPatch = {
  name: 'record-encoder',
  install: () => replaceKafkajsFile(FILE, encodeRecord),
  check: () => {
    if (!isKafkajsFileReplaced(FILE, encodeRecord)) {
      throw patchNotInPlace('record-encoder', 'kafkajs\' producers encode records through its own allocating encoder');
    }
  },
};

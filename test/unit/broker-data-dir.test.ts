import { accessSync, constants, statfsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { temporaryDataParent } from '../../scripts/kafka/broker.js';

describe('where the local broker keeps a temporary data directory', () => {
  it('takes IQGATE_KAFKA_TMPDIR when it is set', () => {
    expect(temporaryDataParent({ IQGATE_KAFKA_TMPDIR: '/somewhere/else' })).toBe('/somewhere/else');
  });

  it('otherwise picks a writable directory: memory (/dev/shm) when it has room, else the OS temp directory', () => {
    const parent = temporaryDataParent({});
    expect(statSync(parent).isDirectory()).toBe(true);
    accessSync(parent, constants.W_OK);
    let shmFree = 0;
    try {
      const fs = statfsSync('/dev/shm');
      shmFree = fs.bavail * fs.bsize;
    } catch {
      // no /dev/shm here
    }
    expect(parent).toBe(shmFree >= 2 * 1024 ** 3 ? '/dev/shm' : tmpdir());
  });
});

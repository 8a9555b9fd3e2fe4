/**
 * Recounts the read_committed output against the model: with the record cache off every count
 * update is forwarded, so a word's updates must be exactly 1, 2, …, total (as the crash tests'
 * outputProblems requires). This counts each kind of departure instead of stopping at the first,
 * so the campaign can say "0 duplicates, 0 losses" with numbers.
 */
export interface OutputAudit {
  readonly words: number;
  readonly updates: number;
  /** Updates whose value the word already had (processed twice). */
  readonly duplicates: number;
  /** Values in 1..total that never appeared (an update lost). */
  readonly losses: number;
  /** Updates smaller than the one before that are not duplicates (reordered). */
  readonly outOfOrder: number;
  /** Values above the model's total, or below 1. */
  readonly outOfRange: number;
  /** Words whose last update is not the model's total. */
  readonly wrongFinal: number;
  /** Words in the output that the input never had. */
  readonly unexpectedWords: number;
  /** A few examples, for the report. */
  readonly samples: readonly string[];
}

export function auditOutput(updates: ReadonlyMap<string, readonly number[]>, expected: ReadonlyMap<string, number>): OutputAudit {
  let count = 0;
  let duplicates = 0;
  let losses = 0;
  let outOfOrder = 0;
  let outOfRange = 0;
  let wrongFinal = 0;
  let unexpectedWords = 0;
  const samples: string[] = [];
  const sample = (text: string): void => {
    if (samples.length < 12) samples.push(text);
  };
  for (const [word, total] of expected) {
    const seq = updates.get(word) ?? [];
    count += seq.length;
    const seen = new Set<number>();
    for (let i = 0; i < seq.length; i += 1) {
      const v = seq[i] ?? 0;
      const context = seq.slice(Math.max(0, i - 3), i + 3).join(',');
      if (v < 1 || v > total) {
        outOfRange += 1;
        sample(`${word}: update #${i} is ${v}, outside 1..${total} (${context})`);
      } else if (seen.has(v)) {
        duplicates += 1;
        sample(`${word}: update #${i} repeats ${v} (${context})`);
      } else if (i > 0 && v < (seq[i - 1] ?? 0)) {
        outOfOrder += 1;
        sample(`${word}: update #${i} is ${v} after ${String(seq[i - 1])} (${context})`);
      }
      seen.add(v);
    }
    for (let v = 1; v <= total; v += 1) {
      if (seen.has(v)) continue;
      losses += 1;
      if (losses <= 3) sample(`${word}: count ${v} never appeared`);
    }
    if (seq[seq.length - 1] !== total) {
      wrongFinal += 1;
      sample(`${word}: last update ${String(seq[seq.length - 1])}, model ${total}`);
    }
  }
  for (const [word, seq] of updates) {
    if (expected.has(word)) continue;
    unexpectedWords += 1;
    count += seq.length;
    sample(`unexpected word ${word} (${seq.length} updates)`);
  }
  return { words: expected.size, updates: count, duplicates, losses, outOfOrder, outOfRange, wrongFinal, unexpectedWords, samples };
}

/** Words whose count differs between a committed store and the model, with a few examples. */
export function storeDifferences(actual: ReadonlyMap<string, number>, expected: ReadonlyMap<string, number>): { readonly count: number; readonly samples: readonly string[] } {
  const samples: string[] = [];
  let count = 0;
  for (const word of new Set([...actual.keys(), ...expected.keys()])) {
    const a = actual.get(word);
    const e = expected.get(word);
    if (a === e) continue;
    count += 1;
    if (samples.length < 8) samples.push(`${word}: store ${String(a)}, model ${String(e)}`);
  }
  return { count, samples };
}

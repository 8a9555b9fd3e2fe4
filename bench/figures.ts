/**
 * What every benchmark reports: one printed line per figure, and bench/results/<bench>.json as
 * an array of `{ name, unit, value }` (the github-action-benchmark format), so a figure can be
 * compared across commits.
 */
import { mkdir, writeFile } from 'node:fs/promises';

export interface Figure {
  readonly name: string;
  readonly unit: string;
  readonly value: number;
}

export class Figures {
  readonly all: Figure[] = [];

  constructor(private readonly format: (figure: Figure) => string = (f) => `${f.name}: ${f.value} ${f.unit}`) {}

  /** Records a figure (rounded to 2 decimals) and prints its line. */
  report(name: string, unit: string, value: number): void {
    const figure = { name, unit, value: Math.round(value * 100) / 100 };
    this.all.push(figure);
    console.log(this.format(figure));
  }

  /** Writes bench/results/<bench>.json. */
  async write(bench: string): Promise<void> {
    await mkdir(new URL('./results/', import.meta.url), { recursive: true });
    await writeFile(new URL(`./results/${bench}.json`, import.meta.url), `${JSON.stringify(this.all, null, 2)}\n`);
  }
}

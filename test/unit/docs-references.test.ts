import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const FOLDERS = ['src', 'bench', 'scripts', 'examples', 'test'];

function sources(): Array<{ path: string; text: string }> {
  return FOLDERS.flatMap((folder) => (readdirSync(join(ROOT, folder), { recursive: true }) as string[])
    .filter((name) => /\.(ts|mjs|js)$/.test(name))
    .map((name) => ({ path: `${folder}/${name}`, text: readFileSync(join(ROOT, folder, name), 'utf8') })));
}

describe('what the code cites', () => {
  it('is in the repository: no notes kept outside it', () => {
    const outside = /\b(DESIGN\.md|KAFKAJS-NOTES|LEVEL-NOTES|KAFKA-CLIENTS\.md)\b|\/work\/shared|\bshared\/[A-Z]/;
    const self = 'test/unit/docs-references.test.ts';
    expect(sources().filter((file) => file.path !== self && outside.test(file.text)).map((file) => file.path)).toEqual([]);
  });

  it('names docs that exist, and sections they have', () => {
    const missing: string[] = [];
    let sections = 0;
    for (const file of sources()) {
      for (const match of file.text.matchAll(/docs\/([a-z-]+\.md)(?: §(\d+))?/g)) {
        if (match[2] !== undefined) sections += 1;
        const doc = join(ROOT, 'docs', match[1]!);
        if (!existsSync(doc)) missing.push(`${file.path}: docs/${match[1]!}`);
        else if (match[2] !== undefined && !new RegExp(`^## ${match[2]}\\. `, 'm').test(readFileSync(doc, 'utf8'))) missing.push(`${file.path}: docs/${match[1]!} §${match[2]}`);
      }
    }
    expect(missing).toEqual([]);
    expect(sections, 'the comments cite sections (the check above looked at them)').toBeGreaterThan(30);
  });
});

/**
 * Prints the README's error-code table from src/errors.ts (the one source of codes):
 * `npx tsx scripts/docs/error-table.ts`. test/unit/errors.test.ts checks that the README
 * shows exactly this table.
 */
import { ERROR_CODES } from '../../src/errors.js';

export function errorTable(): string {
  const rows = Object.entries(ERROR_CODES).map(([code, meaning]) => `| \`${code}\` | ${meaning} |`);
  return ['| code | meaning |', '|---|---|', ...rows].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(errorTable());

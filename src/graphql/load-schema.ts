/**
 * schema.graphql at the repository top level is the contract; the server is built from it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The schema text: from `path`, else the first schema.graphql above this module (src/ or dist/src/). */
export function loadSchemaText(path?: string): string {
  if (path !== undefined) return readFileSync(path, 'utf8');
  for (const relative of ['../../schema.graphql', '../../../schema.graphql']) {
    const candidate = fileURLToPath(new URL(relative, import.meta.url));
    if (existsSync(candidate)) return readFileSync(candidate, 'utf8');
  }
  throw new TypeError('schema.graphql not found above src/graphql; pass schemaPath');
}

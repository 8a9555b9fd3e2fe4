import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { loadApp } from '../../../src/runtime/app-module.js';

const scratch = mkdtempSync(join(tmpdir(), 'iqgate-app-module-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A module in the scratch directory re-exporting one named export of broken-apps.ts as its default. */
function moduleExporting(name: string): string {
  const file = join(scratch, `${name}.ts`);
  writeFileSync(file, `export { ${name} as default } from ${JSON.stringify(join(import.meta.dirname, '../../fixtures/apps/broken-apps.ts'))};\n`);
  return file;
}

async function failure(path: string): Promise<{ code: string; message: string }> {
  const error: unknown = await loadApp(path).then(() => undefined, (e: unknown) => e);
  if (!isIqgateError(error)) throw new Error(`expected an IqgateError, got ${String(error)}`);
  return { code: error.code, message: error.message };
}

describe('loadApp (IQGATE_APP)', () => {
  it('loads an application module: its applicationId, its built topology and its options', async () => {
    const app = await loadApp('test/fixtures/apps/accounts-app.ts');
    expect(app.applicationId).toBe('accounts');
    expect([...app.topology.stores.keys()]).toEqual(['balances']);
    expect(app.topology.subTopologies.flatMap((s) => s.sourceTopics)).toEqual(['accounts']);
    expect(app.options).toEqual({ commitIntervalMs: 50 });
  });

  it('accepts a default export that is a function returning the definition', async () => {
    const file = join(scratch, 'factory.ts');
    writeFileSync(file, `import app from ${JSON.stringify(join(import.meta.dirname, '../../fixtures/apps/accounts-app.ts'))};\nexport default async () => ({ ...app, applicationId: 'from-factory' });\n`);
    const loaded = await loadApp(file);
    expect(loaded.applicationId).toBe('from-factory');
    expect([...loaded.topology.stores.keys()]).toEqual(['balances']);
  });

  it('names the module and the problem, with INVALID_CONFIG, for every way a module can be wrong', async () => {
    expect(await failure('test/fixtures/apps/no-such-app.ts')).toEqual({ code: 'INVALID_CONFIG', message: 'IQGATE_APP=test/fixtures/apps/no-such-app.ts: no such module' });
    expect((await failure(moduleExporting('notAnApp'))).message).toMatch(/default export must be an app definition/);
    expect((await failure(moduleExporting('badTopology'))).message).toMatch(/topology must be a Topology/);
    expect((await failure(moduleExporting('throwingTopology'))).message).toMatch(/building the topology threw: Error: no such serde/);
    expect((await failure(moduleExporting('badApplicationId'))).message).toMatch(/applicationId must be letters/);
    const syntax = join(scratch, 'syntax.ts');
    writeFileSync(syntax, 'export default {{{;\n');
    expect((await failure(syntax)).message).toMatch(/the module failed to load/);
  });
});

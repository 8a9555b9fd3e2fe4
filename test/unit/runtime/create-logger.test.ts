import { execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLogger, logFormatFor } from '../../../src/runtime/create-logger.js';
import { waitFor } from '../../support/wait-for.js';

/** A destination that keeps what is written, a terminal or not. */
function capture(isTTY: boolean): Writable & { isTTY: boolean; text(): string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      text += chunk.toString();
      callback();
    },
  });
  return Object.assign(stream, { isTTY, text: () => text });
}

describe('the log format', () => {
  it('is pretty on a terminal and JSON otherwise, unless configured', () => {
    expect(logFormatFor(undefined, true)).toBe('pretty');
    expect(logFormatFor(undefined, false)).toBe('json');
    expect(logFormatFor('json', true)).toBe('json');
    expect(logFormatFor('pretty', false)).toBe('pretty');
  });

  it('writes one JSON object per line when the destination is not a terminal', async () => {
    const out = capture(false);
    createLogger({ destination: out }).child({ app: 'demo' }).info({ taskId: '0_1' }, 'task running');
    await waitFor(() => out.text().endsWith('\n'), 2000, 5);
    expect(JSON.parse(out.text())).toMatchObject({ level: 30, app: 'demo', taskId: '0_1', msg: 'task running' });
  });

  it('censors fields that hold secrets, in JSON and pretty lines alike', async () => {
    for (const isTTY of [false, true]) {
      const out = capture(isTTY);
      createLogger({ destination: out }).info({ kafkaSecurity: { sasl: { username: 'svc', password: 'hunter2-secret' } }, headers: { authorization: 'Bearer tok-123' } }, 'connecting');
      await waitFor(() => out.text().endsWith('\n'), 2000, 5);
      expect(out.text()).toContain('svc');
      expect(out.text()).toContain('[redacted]');
      expect(out.text()).not.toContain('hunter2-secret');
      expect(out.text()).not.toContain('tok-123');
    }
  });

  it('censors them deeper down, and under librdkafka\'s property names, and leaves a store\'s key alone', async () => {
    const out = capture(false);
    createLogger({ destination: out }).info({
      options: { kafkaSecurity: { sasl: { password: 'secret-1' }, ssl: { key: 'secret-2', keyPassword: 'secret-3' } } },
      config: { 'sasl.password': 'secret-4', 'ssl.key.pem': 'secret-5', 'ssl.key.password': 'secret-6' },
      a: { b: { c: { d: { password: 'secret-7' } } } },
      key: 'store-key-0',
    }, 'connecting');
    await waitFor(() => out.text().endsWith('\n'), 2000, 5);
    expect(out.text()).not.toMatch(/secret-\d/);
    expect(out.text()).toContain('store-key-0');
  });

  it('writes a readable line, no JSON, when the destination is a terminal', async () => {
    const out = capture(true);
    createLogger({ destination: out }).child({ app: 'demo' }).warn({ taskId: '0_1' }, 'task suspended');
    await waitFor(() => out.text().includes('\n'), 2000, 5);
    // eslint-disable-next-line no-control-regex -- colours, if the terminal takes them
    const line = out.text().replace(/\u001b\[[0-9;]*m/g, '');
    expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d\d\d\] WARN: task suspended /);
    expect(line).toContain('"taskId":"0_1"');
    expect(line.trim().split('\n')).toHaveLength(1);
    expect(() => JSON.parse(line) as unknown).toThrow();
  });

  it('follows the configured format over the destination, and the level', async () => {
    const piped = capture(false);
    const logger = createLogger({ destination: piped, format: 'pretty', level: 'warn' });
    logger.info('not shown');
    logger.error('shown');
    await waitFor(() => piped.text().includes('shown'), 2000, 5);
    expect(piped.text()).toMatch(/^\[[\d:.]+\] ERROR.*: shown\n$/);
    expect(piped.text()).not.toContain('\u001b['); // no colours into a pipe
    const terminal = capture(true);
    createLogger({ destination: terminal, format: 'json' }).info('as JSON');
    await waitFor(() => terminal.text().endsWith('\n'), 2000, 5);
    expect(JSON.parse(terminal.text())).toMatchObject({ level: 30, msg: 'as JSON' });
  });
});

describe('IQGATE_LOG_FORMAT', () => {
  it('is validated at start-up: an unknown format stops npm start with INVALID_CONFIG naming the variable', async () => {
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        cwd: root,
        timeout: 30_000,
        env: { ...process.env, IQGATE_LOG_FORMAT: 'xml', KAFKA_BROKERS: '127.0.0.1:1' },
      }, (_error, _stdout, stderr) => resolve({ code: child.exitCode, stderr }));
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/INVALID_CONFIG: invalid environment: IQGATE_LOG_FORMAT: .*'pretty' \| 'json'/);
  });
});

/**
 * This instance's id, kept in its state directory (`iqgate-instance.json`) so that it survives
 * restarts: exactly-once v2 builds its transactional id from it (a restarted instance fences
 * its crashed predecessor and settles its open transaction) and librdkafka's consumer its
 * group.instance.id (static membership: the restart takes the old member's place at once).
 * Without a state directory every start is a new instance.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const FILE = 'iqgate-instance.json';

export function instanceIdFor(stateDir: string | undefined): string {
  if (stateDir === undefined) return randomUUID();
  const file = join(stateDir, FILE);
  try {
    const recorded = JSON.parse(readFileSync(file, 'utf8')) as { instanceId?: unknown };
    if (typeof recorded.instanceId === 'string' && /^[A-Za-z0-9-]{8,64}$/.test(recorded.instanceId)) return recorded.instanceId;
  } catch {
    // none yet, or unreadable: a new one
  }
  const instanceId = randomUUID();
  mkdirSync(stateDir, { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ instanceId })}\n`);
  renameSync(temporary, file);
  return instanceId;
}

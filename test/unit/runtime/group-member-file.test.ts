import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readGroupMember, writeGroupMember } from '../../../src/runtime/group-member-file.js';

const dirs: string[] = [];
const dir = () => {
  const d = mkdtempSync(join(tmpdir(), 'iqgate-member-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the group member file of a state directory', () => {
  it('keeps the last member id of its group, and nothing else', async () => {
    const d = dir();
    expect(readGroupMember(d, 'app')).toBeUndefined();
    await writeGroupMember(d, 'app', 'member-1');
    await writeGroupMember(d, 'app', 'member-2');
    expect(readGroupMember(d, 'app')).toBe('member-2');
    expect(readGroupMember(d, 'other-app')).toBeUndefined();
    expect(readdirSync(d)).toEqual(['iqgate-group-member.json']); // no temporary file left
  });

  it('reads a damaged or foreign file as no member', () => {
    const d = dir();
    writeFileSync(join(d, 'iqgate-group-member.json'), '{"groupId":"app","memb');
    expect(readGroupMember(d, 'app')).toBeUndefined();
    writeFileSync(join(d, 'iqgate-group-member.json'), '{"groupId":"app","memberId":""}');
    expect(readGroupMember(d, 'app')).toBeUndefined();
  });
});

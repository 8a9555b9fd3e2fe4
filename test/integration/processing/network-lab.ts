/**
 * A small network of namespaces for tests that cut one process off the network (needs root and
 * iproute2). Each host is a network namespace of its own, with loopback up and one veth link to a
 * bridge; the bridge lives in a namespace of its own too (so the machine's own bridge and
 * firewall settings never see it), and one more link joins it to the test's namespace. All of
 * them are on one random 10.x.y.0/24: the test's end is 10.x.y.1, host i is 10.x.y.(10 + i).
 *
 * `cut()` takes a host's end of its link down: inside, every route beyond loopback goes (a connect
 * fails with ENETUNREACH, a socket's sends go nowhere); everyone else keeps their links and
 * addresses, and what they send to the host is dropped without an answer — a peer gone silent, as
 * a real partition looks from the other side.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface LabHost {
  /** The network namespace. */
  readonly name: string;
  /** Its address on the lab's network. */
  readonly address: string;
  /** The command prefix that runs a program inside: `ip netns exec <name>`. */
  readonly prefix: readonly string[];
  /** Runs `command` inside and returns its stdout; rejects on a non-zero exit or after `timeoutMs`. */
  exec(command: string, args: readonly string[], timeoutMs?: number): Promise<string>;
  /** Starts `command` inside; the lab's remove() kills it if it is still running. */
  spawn(command: string, args: readonly string[]): ChildProcess;
  /** Takes the host's end of its link down. */
  cut(): Promise<void>;
  /** Brings it up again. */
  restore(): Promise<void>;
}

export interface NetworkLab {
  /** The test's own address on the lab's network (10.x.y.1). */
  readonly address: string;
  readonly hosts: readonly LabHost[];
  /** Kills what the hosts spawned and deletes every namespace and link of the lab. */
  remove(): Promise<void>;
}

/** Root, and an `ip` that knows network namespaces. */
export function networkNamespacesAvailable(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function createNetworkLab(count: number): Promise<NetworkLab> {
  const tag = randomBytes(3).toString('hex');
  const subnet = `10.${randomInt(64, 250)}.${randomInt(0, 256)}`;
  const switchNs = `iqg-${tag}-sw`;
  // Interface names are at most 15 characters.
  const ownEnd = `iqgt${tag}`;
  const namespaces: string[] = [];
  const children = new Set<ChildProcess>();
  const ip = async (...args: string[]): Promise<void> => {
    await run('ip', args);
  };
  const within = (ns: string) => (...args: string[]): Promise<void> => ip('netns', 'exec', ns, 'ip', ...args);
  const inSwitch = within(switchNs);
  /** A veth pair whose ends go to `ns` (null: the test's namespace) and onto the bridge. */
  const link = async (ns: string | null, end: string): Promise<void> => {
    const bridgeEnd = `${end}b`;
    await ip('link', 'add', end, 'type', 'veth', 'peer', 'name', bridgeEnd);
    await ip('link', 'set', bridgeEnd, 'netns', switchNs);
    await inSwitch('link', 'set', bridgeEnd, 'master', 'br0');
    await inSwitch('link', 'set', bridgeEnd, 'up');
    if (ns !== null) await ip('link', 'set', end, 'netns', ns);
  };
  const remove = async (): Promise<void> => {
    await Promise.all([...children].map((child) => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        resolve();
        return;
      }
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    })));
    // A namespace's links go with it (both ends of a veth pair), the test's end too.
    for (const ns of [...namespaces].reverse()) await ip('netns', 'delete', ns).catch(() => undefined);
    await ip('link', 'delete', ownEnd).catch(() => undefined);
  };

  const hosts: LabHost[] = [];
  try {
    await ip('netns', 'add', switchNs);
    namespaces.push(switchNs);
    await inSwitch('link', 'add', 'br0', 'type', 'bridge');
    await inSwitch('link', 'set', 'br0', 'up');
    await link(null, ownEnd);
    await ip('addr', 'add', `${subnet}.1/24`, 'dev', ownEnd);
    await ip('link', 'set', ownEnd, 'up');
    for (let i = 0; i < count; i += 1) {
      const name = `iqg-${tag}-${i}`;
      const end = `iqg${i}n${tag}`;
      const address = `${subnet}.${10 + i}`;
      await ip('netns', 'add', name);
      namespaces.push(name);
      await link(name, end);
      const inside = within(name);
      await inside('addr', 'add', `${address}/24`, 'dev', end);
      await inside('link', 'set', end, 'up');
      await inside('link', 'set', 'lo', 'up');
      hosts.push({
        name,
        address,
        prefix: ['ip', 'netns', 'exec', name],
        exec: async (command, args, timeoutMs = 10_000) => (await run('ip', ['netns', 'exec', name, command, ...args], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 })).stdout,
        spawn: (command, args) => {
          const child = spawn('ip', ['netns', 'exec', name, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
          children.add(child);
          child.once('exit', () => children.delete(child));
          return child;
        },
        cut: () => inside('link', 'set', end, 'down'),
        restore: () => inside('link', 'set', end, 'up'),
      });
    }
  } catch (error) {
    await remove();
    throw error;
  }
  return { address: `${subnet}.1`, hosts, remove };
}

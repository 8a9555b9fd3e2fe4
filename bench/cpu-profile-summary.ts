/**
 * What a V8 CPU profile (.cpuprofile, from the inspector's Profiler domain) says about an event
 * loop shared by processing and queries: self time by package and by function, and — what
 * delays a query — the event loop's time by *entry*: the macrotask a sample belongs to, named by
 * its first application frame (a processing slice, a consumer batch, a commit continuation, a
 * GraphQL request, ...), with how long each uninterrupted stretch of one entry held the thread.
 *
 * A stretch is a run of consecutive samples of one entry; GC and (program) samples inside a run
 * extend it (they stop the thread all the same) and an (idle) sample or a gap of more than 4
 * sampling intervals ends it. Back-to-back macrotasks of one entry merge (two slices with an
 * empty poll between): what a waiting request sees.
 *
 *   node --import tsx bench/cpu-profile-summary.ts <file.cpuprofile>   (or summariseCpuProfile())
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples?: readonly number[];
  readonly timeDeltas?: readonly number[];
  readonly startTime: number;
  readonly endTime: number;
}

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SPECIAL = new Set(['(garbage collector)', '(program)', '(idle)', '(root)']);

function where(url: string): string {
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  return path.startsWith(ROOT) ? path.slice(ROOT.length) : path;
}

/** A frame's owner: a package, an iqgate folder, node internals, or '' for a native frame. */
function ownerOf(url: string): string {
  const w = where(url);
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(w)?.[1];
  if (pkg !== undefined) return pkg;
  if (w.startsWith('src/')) return w.split('/').slice(0, 2).join('/');
  if (w.startsWith('node:')) return 'node';
  if (w === '') return '';
  return w.split('/')[0] ?? w;
}

const QUERY_PACKAGES = /^(graphql|graphql-yoga|@graphql-yoga\/|@graphql-tools\/|@envelop\/|@whatwg-node\/|@escape\.tech\/|dataloader|src\/graphql|src\/query)/;

/** What an entry frame's owner is, in the words of the report. */
function entryName(owner: string, frame: ProfileNode['callFrame']): string {
  if (QUERY_PACKAGES.test(owner)) return 'queries (GraphQL/HTTP)';
  if (owner.startsWith('src/')) return `${owner} ${frame.functionName || '(anonymous)'}`;
  return owner;
}

export function summariseCpuProfile(profile: CpuProfile, label: string): string {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  // Each node's entry: the first application frame from the root down, or the top frame's name.
  const entryOf = new Map<number, string>();
  const entry = (id: number): string => {
    const known = entryOf.get(id);
    if (known !== undefined) return known;
    const stack: ProfileNode[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.unshift(byId.get(at)!);
    const top = stack[1]; // below (root)
    let name: string;
    if (top === undefined) name = '(root)';
    else if (SPECIAL.has(top.callFrame.functionName)) name = top.callFrame.functionName;
    else {
      const app = stack.slice(1).find((n) => { const o = ownerOf(n.callFrame.url); return o !== '' && o !== 'node'; });
      name = app === undefined ? `node ${top.callFrame.functionName || '(anonymous)'}${stack[2] ? ` > ${stack[2].callFrame.functionName}` : ''}` : entryName(ownerOf(app.callFrame.url), app.callFrame);
    }
    entryOf.set(id, name);
    return name;
  };

  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const interval = deltas.length > 1 ? [...deltas].sort((a, b) => a - b)[Math.floor(deltas.length / 2)]! : 1000;
  const total = profile.endTime - profile.startTime;
  const selfUs = new Map<number, number>();
  const runs = new Map<string, number[]>();
  const entryUs = new Map<string, number>();
  let runEntry: string | null = null;
  let runUs = 0;
  const endRun = (): void => {
    if (runEntry !== null && runUs > 0) {
      let list = runs.get(runEntry);
      if (list === undefined) runs.set(runEntry, (list = []));
      list.push(runUs);
    }
    runEntry = null;
    runUs = 0;
  };
  for (let i = 0; i < samples.length; i += 1) {
    const id = samples[i]!;
    // A sample stands for the time until the next one (the profiler's own convention).
    const us = deltas[i + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + us);
    const e = entry(id);
    if (e === '(idle)' || (deltas[i] ?? 0) > 4 * interval) endRun();
    if (e === '(idle)') continue;
    entryUs.set(e, (entryUs.get(e) ?? 0) + us);
    if (e === '(garbage collector)' || e === '(program)') {
      if (runEntry !== null) runUs += us;
      continue;
    }
    if (e !== runEntry) {
      endRun();
      runEntry = e;
    }
    runUs += us;
  }
  endRun();

  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const w = where(url);
    byFunction.set(`${functionName || '(anonymous)'}${w ? ` ${w}:${lineNumber + 1}` : ''}`, (byFunction.get(`${functionName || '(anonymous)'}${w ? ` ${w}:${lineNumber + 1}` : ''}`) ?? 0) + us);
    const owner = ownerOf(url) || functionName;
    byPackage.set(owner, (byPackage.get(owner) ?? 0) + us);
  }
  const pct = (us: number): string => `${(100 * us / total).toFixed(1).padStart(5)}%`;
  const ms = (us: number): string => `${(us / 1000).toFixed(0).padStart(6)} ms`;
  const top = (m: Map<string, number>, n: number): string => [...m].sort((a, b) => b[1] - a[1]).slice(0, n)
    .map(([k, us]) => `  ${pct(us)} ${ms(us)}  ${k}`).join('\n');
  const stretches = [...runs].map(([e, list]) => {
    const sorted = [...list].sort((a, b) => a - b);
    return { e, n: list.length, p50: sorted[Math.floor(sorted.length / 2)]!, p99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!, max: sorted[sorted.length - 1]!, us: entryUs.get(e) ?? 0 };
  }).sort((a, b) => b.us - a.us).slice(0, 14)
    .map((s) => `  ${pct(s.us)} ${ms(s.us)}  stretches ${String(s.n).padStart(5)}  p50 ${(s.p50 / 1000).toFixed(1).padStart(5)}  p99 ${(s.p99 / 1000).toFixed(1).padStart(5)}  max ${(s.max / 1000).toFixed(1).padStart(5)} ms  ${s.e}`).join('\n');
  const special = ['(garbage collector)', '(program)', '(idle)'].map((e) => `${e} ${pct(entryUs.get(e) ?? (e === '(idle)' ? [...selfUs].filter(([id]) => entry(id) === '(idle)').reduce((a, [, us]) => a + us, 0) : 0)).trim()}`).join(', ');
  return `profile ${label}: ${(total / 1e6).toFixed(1)} s, sampling ${interval} µs; ${special}
 event loop by entry (the macrotask a sample belongs to; GC and (program) inside a stretch extend it):
${stretches}
 self time by package:
${top(byPackage, 14)}
 top self time:
${top(byFunction, 25)}`;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const file of process.argv.slice(2)) console.log(summariseCpuProfile(JSON.parse(await readFile(file, 'utf8')) as CpuProfile, file));
}

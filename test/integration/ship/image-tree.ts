/**
 * The Docker image's file tree, rebuilt without Docker (the development machines have no
 * engine) from the Dockerfile's own instructions, so that a file the image lacks fails a test:
 * every stage gets a directory standing for its WORKDIR, each COPY copies exactly what it names
 * (from the build context, minus .dockerignore, or from an earlier stage), and each RUN step is
 * run there — except the few this module knows to stand in for:
 *  - `npm ci` in a build stage (the full development install): the repository's own
 *    node_modules is linked instead (same lock file; installing the dev tree again takes minutes);
 *  - `mkdir`/`chown` of the state directory: the caller maps the volume to a temporary directory;
 *  - `npm cache clean`: it would clean this machine's cache.
 * The last stage's `npm ci --omit=dev` runs for real. A RUN step it does not know fails the
 * rebuild, naming the step, so the Dockerfile cannot do something the test does not reproduce.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';

export interface DockerInstruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}

/** Instructions with their continuation lines joined; comments and blank lines dropped. */
export function parseDockerfile(text: string): DockerInstruction[] {
  const instructions: DockerInstruction[] = [];
  let pending = '';
  let startLine = 0;
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) return;
    if (pending !== '' && line.startsWith('#')) return; // a comment inside a continued instruction
    if (pending === '') startLine = index + 1;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    const full = `${pending}${line}`.trim();
    pending = '';
    const keyword = full.split(/\s+/, 1)[0] ?? '';
    instructions.push({ keyword: keyword.toUpperCase(), args: full.slice(keyword.length).trim(), line: startLine });
  });
  return instructions;
}

export interface ImageTree {
  /** The last stage's WORKDIR on this machine. */
  readonly dir: string;
  readonly workdir: string;
  /** The last stage's ENV. */
  readonly env: Readonly<Record<string, string>>;
  readonly user: string | undefined;
  readonly volumes: readonly string[];
  /** HEALTHCHECK's command (exec form), undefined without one. */
  readonly healthcheck: readonly string[] | undefined;
  /** CMD (exec form). */
  readonly cmd: readonly string[];
  /** What was stood in for instead of run, one line each. */
  readonly stoodInFor: readonly string[];
}

export interface ImageTreeOptions {
  /** The build context (the repository). */
  readonly context: string;
  /** The Dockerfile's text (a test may pass an altered one). */
  readonly dockerfile: string;
  /** An empty directory to build the stages in. */
  readonly into: string;
  /** The environment RUN steps start from (each stage's ENV goes on top). */
  readonly env: NodeJS.ProcessEnv;
  /** Milliseconds each RUN step may take. */
  readonly stepTimeoutMs?: number;
}

interface Stage {
  readonly name: string | undefined;
  readonly dir: string;
  workdir: string | undefined;
  readonly env: Record<string, string>;
}

/** `ENV A=1 B=2` (or the legacy `ENV A 1`); no quoting, which this Dockerfile does not use. */
function parseEnv(args: string): Record<string, string> {
  if (!args.includes('=')) {
    const [name = '', ...value] = args.split(/\s+/);
    return { [name]: value.join(' ') };
  }
  return Object.fromEntries(args.split(/\s+/).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

function execForm(args: string, what: string): string[] {
  try {
    const parsed: unknown = JSON.parse(args);
    if (Array.isArray(parsed) && parsed.every((part) => typeof part === 'string')) return parsed as string[];
  } catch {
    // reported below
  }
  throw new Error(`${what} must be in exec form (a JSON array), got: ${args}`);
}

/** .dockerignore's patterns that this repository uses: a path, a top-level glob like `*.log`. */
function ignoredBy(context: string): (path: string) => boolean {
  const file = join(context, '.dockerignore');
  const patterns = existsSync(file)
    ? readFileSync(file, 'utf8').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))
    : [];
  return (path) => {
    const rel = relative(context, path);
    return patterns.some((pattern) => pattern.startsWith('*')
      ? basename(rel).endsWith(pattern.slice(1))
      : rel === pattern || rel.startsWith(`${pattern}/`));
  };
}

export function buildImageTree(options: ImageTreeOptions): ImageTree {
  const instructions = parseDockerfile(options.dockerfile);
  const ignored = ignoredBy(options.context);
  const stages: Stage[] = [];
  const stoodInFor: string[] = [];
  let user: string | undefined;
  let volumes: string[] = [];
  let healthcheck: string[] | undefined;
  let cmd: string[] = [];

  const current = (instruction: DockerInstruction): Stage => {
    const stage = stages.at(-1);
    if (stage === undefined) throw new Error(`line ${instruction.line}: ${instruction.keyword} before FROM`);
    return stage;
  };
  /** A path inside a stage (absolute, under its WORKDIR) on this machine. */
  const inStage = (stage: Stage, path: string, line: number): string => {
    if (stage.workdir === undefined) throw new Error(`line ${line}: a path before WORKDIR`);
    const absolute = path.startsWith('/') ? path : `${stage.workdir.replace(/\/$/, '')}/${path}`;
    const rel = relative(stage.workdir, absolute);
    if (rel.startsWith('..')) throw new Error(`line ${line}: ${path} is outside WORKDIR ${stage.workdir}; the rebuild only reproduces WORKDIR`);
    return join(stage.dir, rel);
  };

  for (const instruction of instructions) {
    const { keyword, args, line } = instruction;
    switch (keyword) {
      case 'FROM': {
        const name = /\bAS\s+(\S+)$/i.exec(args)?.[1];
        const dir = join(options.into, `stage-${stages.length}${name === undefined ? '' : `-${name}`}`);
        mkdirSync(dir, { recursive: true });
        // A new stage starts with the base image's state: no user, no volumes, no command.
        stages.push({ name, dir, workdir: undefined, env: {} });
        user = undefined;
        volumes = [];
        healthcheck = undefined;
        cmd = [];
        break;
      }
      case 'WORKDIR':
        current(instruction).workdir = args;
        break;
      case 'ENV':
        Object.assign(current(instruction).env, parseEnv(args));
        break;
      case 'COPY': {
        const stage = current(instruction);
        const words = args.split(/\s+/);
        const flags = words.filter((word) => word.startsWith('--'));
        const paths = words.filter((word) => !word.startsWith('--'));
        const dest = paths.pop();
        if (dest === undefined || paths.length === 0) throw new Error(`line ${line}: COPY needs a source and a destination`);
        const fromName = flags.find((flag) => flag.startsWith('--from='))?.slice('--from='.length);
        const from = fromName === undefined ? undefined : stages.find((candidate, index) => candidate.name === fromName || String(index) === fromName);
        if (fromName !== undefined && from === undefined) throw new Error(`line ${line}: no stage ${fromName}`);
        const target = inStage(stage, dest, line);
        for (const source of paths) {
          if (/[*?[]/.test(source)) throw new Error(`line ${line}: wildcards are not reproduced (${source})`);
          const origin = from === undefined ? resolve(options.context, source) : inStage(from, source, line);
          if (!existsSync(origin) || (from === undefined && ignored(origin))) {
            throw new Error(`line ${line}: COPY ${source}: no such file in the ${from === undefined ? 'build context' : `stage ${fromName}`}`);
          }
          const isDirectory = statSync(origin).isDirectory();
          // As docker: a directory's contents go into dest; a file into dest/ or onto dest.
          const into = !isDirectory && (dest.endsWith('/') || paths.length > 1) ? join(target, basename(source)) : target;
          cpSync(origin, into, { recursive: true, filter: (path) => from !== undefined || !ignored(path) });
        }
        break;
      }
      case 'RUN': {
        const stage = current(instruction);
        const last = stage === stages.at(-1) && instructions.slice(instructions.indexOf(instruction)).every((later) => later.keyword !== 'FROM');
        for (const step of args.split('&&').map((part) => part.trim())) {
          if (/^npm ci\b/.test(step) && !last) {
            symlinkSync(resolve(options.context, 'node_modules'), join(stage.dir, 'node_modules'), 'dir');
            stoodInFor.push(`line ${line}: ${step} → linked the repository's node_modules`);
          } else if (/^(mkdir -p|chown \S+) \/var\/lib\/iqgate$/.test(step)) {
            stoodInFor.push(`line ${line}: ${step} → the volume is a temporary directory`);
          } else if (/^apt-get (update|install)\b/.test(step)) {
            // Debian packages: this machine must have them (the image's base is Debian too).
            const packages = step.startsWith('apt-get install') ? step.split(/\s+/).slice(2).filter((word) => !word.startsWith('-')) : [];
            for (const name of packages) {
              if (spawnSync('dpkg', ['-s', name], { stdio: 'ignore' }).status !== 0) throw new Error(`line ${line}: RUN ${step}: ${name} is not installed on this machine`);
            }
            stoodInFor.push(`line ${line}: ${step} → ${packages.length === 0 ? 'skipped' : `checked installed here: ${packages.join(' ')}`}`);
          } else if (/^rm -rf \/var\/lib\/apt\/lists\/\*$/.test(step)) {
            stoodInFor.push(`line ${line}: ${step} → skipped`);
          } else if (/^npm cache clean\b/.test(step)) {
            stoodInFor.push(`line ${line}: ${step} → skipped (this machine's cache)`);
          } else if (/^npm (ci|run build)\b/.test(step)) {
            const result = spawnSync('sh', ['-c', step], {
              cwd: stage.dir,
              env: { ...options.env, ...stage.env },
              encoding: 'utf8',
              timeout: options.stepTimeoutMs ?? 240_000,
            });
            if (result.status !== 0) {
              throw new Error(`line ${line}: RUN ${step} failed (exit ${String(result.status)}${result.error ? `, ${String(result.error)}` : ''}):\n${`${result.stdout}${result.stderr}`.slice(-3000)}`);
            }
          } else {
            throw new Error(`line ${line}: RUN ${step}: not a step test/integration/ship/image-tree.ts knows how to reproduce`);
          }
        }
        break;
      }
      case 'USER':
        user = args;
        break;
      case 'VOLUME':
        volumes = args.startsWith('[') ? execForm(args, 'VOLUME') : args.split(/\s+/);
        break;
      case 'HEALTHCHECK': {
        const at = args.search(/\bCMD\b/);
        healthcheck = at < 0 ? undefined : execForm(args.slice(at + 3).trim(), 'HEALTHCHECK CMD');
        break;
      }
      case 'CMD':
        cmd = execForm(args, 'CMD');
        break;
      case 'EXPOSE':
      case 'LABEL':
        break;
      default:
        throw new Error(`line ${line}: ${keyword} is not reproduced by test/integration/ship/image-tree.ts`);
    }
  }
  const final = stages.at(-1);
  if (final?.workdir === undefined) throw new Error('the Dockerfile has no stage with a WORKDIR');
  return { dir: final.dir, workdir: final.workdir, env: final.env, user, volumes, healthcheck, cmd, stoodInFor };
}

/**
 * Graceful shutdown on SIGTERM/SIGINT: the first signal stops the runtime (commit what is
 * processed, leave the group, close stores), then exits; a second signal, or the timeout,
 * exits at once (a hard stop is safe: nothing uncommitted ever reaches a store).
 */
export interface Stoppable {
  stop(): Promise<void>;
}

export interface ShutdownHookOptions {
  readonly signals?: readonly NodeJS.Signals[];
  /** Exit code after a clean stop; `null` to not exit (embedding services exit themselves). */
  readonly exitCode?: number | null;
  readonly timeoutMs?: number;
  readonly onError?: (error: unknown) => void;
}

/** Installs the handlers; returns a function that removes them. */
export function installShutdownHooks(target: Stoppable, options: ShutdownHookOptions = {}): () => void {
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) {
      process.exit(130);
    }
    stopping = true;
    const timer = setTimeout(() => process.exit(1), options.timeoutMs ?? 30_000);
    timer.unref();
    target.stop().then(
      () => {
        clearTimeout(timer);
        if (options.exitCode !== null) process.exit(options.exitCode ?? 0);
      },
      (error: unknown) => {
        options.onError?.(error);
        process.exit(1);
      },
    );
    void signal;
  };
  for (const s of signals) process.on(s, handler);
  return () => {
    for (const s of signals) process.off(s, handler);
  };
}

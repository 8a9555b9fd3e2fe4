/**
 * Waits for a condition instead of sleeping for a guess: resolves when `predicate` holds,
 * checking every `intervalMs`; rejects after `timeoutMs`, naming `what` was awaited.
 */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  intervalMs = 20,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

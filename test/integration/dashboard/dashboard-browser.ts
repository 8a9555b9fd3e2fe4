/**
 * The browser side of the dashboard tests: Debian's Chromium driven by playwright-core, and a
 * recorder installed in the page before its own scripts run. The recorder watches the
 * explorer's table and status line with a MutationObserver and keeps, per key and column,
 * every value the page ever displayed (in order), whether a row was ever shown as differing,
 * and every status text — so a test can check what the page showed at any moment, not only at
 * the moments it happened to look.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export interface Seen {
  /** key (as the row's data-key) → the values the column displayed, in order, consecutive repeats dropped. */
  readonly committed: Record<string, string[]>;
  readonly uncommitted: Record<string, string[]>;
  /** Renders in which at least one row was highlighted as differing. */
  readonly diffRenders: number;
  readonly statuses: string[];
}

function recorder(): void {
  const seen: { committed: Record<string, string[]>; uncommitted: Record<string, string[]>; diffRenders: number; statuses: string[] } = {
    committed: {}, uncommitted: {}, diffRenders: 0, statuses: [],
  };
  (window as unknown as { __seen: typeof seen }).__seen = seen;
  const record = (): void => {
    const rows = document.querySelectorAll<HTMLTableRowElement>('#explorer tbody tr');
    let diff = false;
    rows.forEach((row) => {
      if (row.classList.contains('diff')) diff = true;
      row.querySelectorAll<HTMLTableCellElement>('td[data-column]').forEach((cell) => {
        const json = cell.dataset.json;
        if (json === undefined) return;
        const column = cell.dataset.column as 'committed' | 'uncommitted';
        const values = (seen[column][row.dataset.key!] ??= []);
        if (values.at(-1) !== json) values.push(json);
      });
    });
    if (diff) seen.diffRenders += 1;
    const status = document.querySelector('#explorer-status')?.textContent ?? '';
    if (seen.statuses.at(-1) !== status) seen.statuses.push(status);
  };
  document.addEventListener('DOMContentLoaded', () => {
    const observer = new MutationObserver(record);
    observer.observe(document.querySelector('#explorer')!, { childList: true, subtree: true, characterData: true });
    observer.observe(document.querySelector('#explorer-status')!, { childList: true, subtree: true, characterData: true, attributes: true });
  });
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true });
}

/** A page with the recorder installed; page errors, and anything the page's Content-Security-Policy blocked, fail the test through `errors`. */
export async function openDashboard(browser: Browser, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) errors.push(message.text());
  });
  await page.addInitScript(recorder);
  await page.goto(url);
  return { page, errors };
}

export function seen(page: Page): Promise<Seen> {
  return page.evaluate(() => (window as unknown as { __seen: Seen }).__seen);
}

/** Waits until the explorer's status line has this state (data-state), returning its text. */
export async function explorerState(page: Page, state: string, timeoutMs = 30_000): Promise<string> {
  await page.waitForFunction((s) => document.querySelector('#explorer-status')?.getAttribute('data-state') === s, state, { timeout: timeoutMs });
  return (await page.locator('#explorer-status').textContent()) ?? '';
}

export async function connectionState(page: Page, state: 'connected' | 'unreachable', timeoutMs = 30_000): Promise<void> {
  await page.waitForFunction((s) => document.querySelector('#connection')?.getAttribute('data-state') === s, state, { timeout: timeoutMs });
}

/** The committed column as displayed now: key → parsed value (rows with a value only). */
export function displayed(page: Page, column: 'committed' | 'uncommitted'): Promise<Record<string, unknown>> {
  return page.evaluate((c) => {
    const out: Record<string, unknown> = {};
    document.querySelectorAll<HTMLTableRowElement>('#explorer tbody tr').forEach((row) => {
      const json = row.querySelector<HTMLTableCellElement>(`td[data-column="${c}"]`)?.dataset.json;
      if (json !== undefined) out[JSON.parse(row.dataset.key!) as string] = JSON.parse(json);
    });
    return out;
  }, column);
}

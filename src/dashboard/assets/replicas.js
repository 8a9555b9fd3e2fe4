// How the page says which copy of a partition it is looking at: the active task or a standby
// replica (numStandbyReplicas), a standby's lag (KIP-535: changelog offsets behind the active
// task, and the time since it was last caught up), and, for a query's per-partition outcome
// (PartitionResult), who answered it: the instance (servedBy), whether a standby did, or why
// nobody could (the failure with the owner and the standbys it names).

/** "300 ms" / "2.4 s" / "3.0 min" for a duration in milliseconds. */
export function duration(ms) {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** "5 offsets · 300 ms" for a Lag { offsets timeMs }; '' for none (an active task). */
export function lagText(lag) {
  if (lag == null) return '';
  return `${lag.offsets} offset${lag.offsets === 1 ? '' : 's'} · ${duration(lag.timeMs)}`;
}

export const LAG_TITLE = 'standby lag: changelog offsets behind the active task (as of its last poll) · time since it was last caught up';

/** A "standby" or "active" badge element. */
export function replicaBadge(active) {
  const span = document.createElement('span');
  span.className = `badge replica ${active ? 'active' : 'standby'}`;
  span.dataset.replica = active ? 'active' : 'standby';
  span.textContent = active ? 'active' : 'standby';
  return span;
}

/** The URL without its /graphql path, "(here)" after this page's own instance's. */
export function hostText(url, selfUrl) {
  if (url == null) return 'this instance';
  const host = url.replace(/\/graphql$/, '');
  return selfUrl !== undefined && url === selfUrl ? `${host} (here)` : host;
}

/**
 * Who answered one partition of a query result ({ partition standby lag servedBy failure }), as
 * { kind: 'active' | 'standby' | 'failed', text, title }.
 */
export function answeredBy(outcome, selfUrl) {
  if (outcome.failure != null) {
    const { reason, owner, standbys, message } = outcome.failure;
    const parts = [reason];
    if (owner != null) parts.push(`owner ${hostText(owner, selfUrl)}`);
    if (standbys != null && standbys.length > 0) parts.push(`standbys ${standbys.map((url) => hostText(url, selfUrl)).join(', ')}`);
    return { kind: 'failed', text: parts.join(' · '), title: message ?? reason };
  }
  const by = hostText(outcome.servedBy, selfUrl);
  if (outcome.standby) {
    const lag = lagText(outcome.lag);
    return { kind: 'standby', text: `standby ${by} · ${lag === '' ? 'lag not known yet' : `${lag} behind`}`, title: `a standby replica answered (${outcome.servedBy ?? 'this instance'}); ${LAG_TITLE}` };
  }
  return { kind: 'active', text: `active ${by}`, title: `the active task answered (${outcome.servedBy ?? 'this instance'})` };
}

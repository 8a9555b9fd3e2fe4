// The dashboard page: polls the instance, its stores and partitions and the recent figures
// (one GraphQL query a second and a half), and hosts the explorer (explorer.js), which follows
// its keys live through two subscriptions. Works against any iqgate application: everything it
// shows comes from the GraphQL schema, the stores included. Standby replicas kept here
// (numStandbyReplicas) are listed with the active partitions, badged, with their lag.
import { renderChart } from './chart.js';
import { Explorer } from './explorer.js';
import { describeErrors, query } from './graphql-client.js';
import { LAG_TITLE, lagText, replicaBadge } from './replicas.js';

const ENDPOINT = document.querySelector('meta[name="iqgate-graphql"]')?.content || '/graphql';
const POLL_MS = 1_500;
const MAX_POLL_MS = 5_000;
const HISTORY_MINUTES = 5;

const OVERVIEW = `query DashboardOverview {
  instance {
    state serving stores tasks kafkaError { code message }
    applicationId kafkaClient processingGuarantee commitIntervalMs
    commits commitLatencyP50Ms commitLatencyP99Ms lastCommitAt
    history(minutes: ${HISTORY_MINUTES}) { start durationMs commits recordsCommitted commitLatencyAvgMs commitLatencyMaxMs pauseMaxMs }
  }
  stores {
    name keySerde valueSerde partitions
    localPartitions { partition taskId state active standbyLag { offsets timeMs } committedPosition uncommittedPosition lag lastCommitAt }
  }
  tasks { id active lag { offsets timeMs } }
}`;

const $ = (selector) => document.querySelector(selector);
let stores = new Map();

function ago(iso) {
  if (iso == null) return '—';
  const ms = Date.now() - Date.parse(iso);
  return ms < 1_000 ? `${Math.max(0, Math.round(ms))} ms ago` : `${(ms / 1000).toFixed(1)} s ago`;
}

const ms = (v) => (v == null ? '—' : `${v < 10 ? v.toFixed(1) : Math.round(v)} ms`);

function positionText(position) {
  if (position == null) return '—';
  const parts = [];
  for (const [topic, partitions] of Object.entries(position)) {
    for (const [p, offset] of Object.entries(partitions)) parts.push(`${topic}[${p}]@${offset}`);
  }
  return parts.length === 0 ? '(nothing applied)' : parts.join(' ');
}

function cell(text, attributes = {}) {
  const td = document.createElement('td');
  td.textContent = text;
  for (const [k, v] of Object.entries(attributes)) td.setAttribute(k, v);
  return td;
}

function setConnection(state, text) {
  const node = $('#connection');
  node.dataset.state = state;
  node.textContent = text;
}

/** "2 (most behind: 5 offsets · 300 ms)" for the standby tasks kept here; "none" without any. */
function standbyFact(tasks) {
  const standbys = tasks.filter((t) => !t.active);
  if (standbys.length === 0) return 'none';
  const lags = standbys.map((t) => t.lag).filter((lag) => lag != null);
  // A standby whose lag is null has not read its changelogs' ends yet: behind by an unknown amount.
  if (lags.length < standbys.length) return `${standbys.length} (most behind: not known yet)`;
  const worst = lags.reduce((a, b) => (b.offsets > a.offsets || (b.offsets === a.offsets && b.timeMs > a.timeMs) ? b : a));
  return `${standbys.length} (most behind: ${lagText(worst)})`;
}

function renderInstance(instance, tasks) {
  $('#app-id').textContent = instance.applicationId ?? '';
  const badge = $('#instance-state');
  badge.textContent = instance.state;
  badge.dataset.state = instance.state;
  const facts = [
    ['state', `${instance.state}${instance.serving ? ' (serving queries)' : ' (not serving)'}`],
    ['Kafka client', instance.kafkaClient ?? '—'],
    ['guarantee', instance.processingGuarantee ?? '—'],
    ['commit interval', ms(instance.commitIntervalMs)],
    ['stores · tasks', `${instance.stores} · ${instance.tasks}`],
    ['standby tasks', standbyFact(tasks)],
    ['commits', instance.commits ?? '—'],
    ['commit latency p50 · p99', `${ms(instance.commitLatencyP50Ms)} · ${ms(instance.commitLatencyP99Ms)}`],
    ['last commit', ago(instance.lastCommitAt)],
  ];
  const dl = $('#instance-facts');
  dl.replaceChildren(...facts.flatMap(([term, value]) => {
    const dt = document.createElement('dt');
    dt.textContent = term;
    const dd = document.createElement('dd');
    dd.textContent = String(value);
    dd.dataset.fact = term;
    return [dt, dd];
  }));
  const problem = $('#kafka-error');
  problem.hidden = instance.kafkaError == null;
  problem.textContent = instance.kafkaError == null ? '' : `Out of the consumer group: ${instance.kafkaError.message} (${instance.kafkaError.code}). Committed state stays readable; nothing commits meanwhile.`;
}

function renderPartitions(list) {
  const rows = [];
  for (const store of list) {
    if (store.localPartitions.length === 0) {
      const tr = document.createElement('tr');
      tr.append(cell(store.name), cell(`none of ${store.partitions} hosted here`, { colspan: '9', class: 'muted' }));
      rows.push(tr);
    }
    for (const p of store.localPartitions) {
      const tr = document.createElement('tr');
      tr.dataset.store = store.name;
      tr.dataset.partition = String(p.partition);
      tr.dataset.replica = p.active ? 'active' : 'standby';
      if (!p.active) tr.classList.add('standby');
      const replica = cell('', { 'data-column': 'replica' });
      replica.append(replicaBadge(p.active));
      tr.append(
        cell(store.name),
        cell(String(p.partition)),
        cell(p.taskId),
        replica,
        cell(p.state, { 'data-state': p.state }),
        cell(positionText(p.committedPosition), { class: 'position', 'data-column': 'committed' }),
        cell(positionText(p.uncommittedPosition), { class: 'position', 'data-column': 'uncommitted' }),
        cell(p.lag == null ? '—' : String(p.lag), { 'data-column': 'lag' }),
        cell(p.active ? '' : lagText(p.standbyLag) || 'not known yet', { 'data-column': 'standby-lag', title: p.active ? '' : LAG_TITLE }),
        cell(ago(p.lastCommitAt)),
      );
      rows.push(tr);
    }
  }
  $('#partitions tbody').replaceChildren(...rows);
  $('#store-names').replaceChildren(...list.map((s) => Object.assign(document.createElement('option'), { value: s.name, label: `${s.keySerde} → ${s.valueSerde}` })));
}

function selectionFromHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  return Object.fromEntries(params.entries());
}

const explorer = new Explorer(ENDPOINT, $('#explorer-section'), () => stores);
const fromHash = selectionFromHash();
if (fromHash.store !== undefined) {
  explorer.fill(fromHash);
  explorer.watch(explorer.readForm());
}

// A link or a typed URL with another selection (#store=…&mode=…) watches it.
window.addEventListener('hashchange', () => {
  const selection = selectionFromHash();
  if (selection.store === undefined) return;
  explorer.fill(selection);
  explorer.watch(explorer.readForm());
});

async function poll() {
  let delay = POLL_MS;
  try {
    const result = await query(ENDPOINT, OVERVIEW);
    if (result.data == null) throw new Error(describeErrors(result.errors));
    setConnection('connected', 'connected');
    renderInstance(result.data.instance, result.data.tasks);
    renderChart($('#chart'), result.data.instance.history, HISTORY_MINUTES * 60_000);
    stores = new Map(result.data.stores.map((s) => [s.name, s]));
    renderPartitions(result.data.stores);
    // With nothing chosen, watch the first store's first keys: the page shows something at once.
    if (!explorer.watching() && fromHash.store === undefined && result.data.stores.length > 0) {
      explorer.fill({ store: result.data.stores[0].name, mode: 'range' });
      explorer.watch(explorer.readForm());
    }
    poll.failures = 0;
  } catch (error) {
    poll.failures = (poll.failures ?? 0) + 1;
    delay = Math.min(MAX_POLL_MS, POLL_MS * 2 ** Math.min(poll.failures - 1, 3));
    setConnection('unreachable', `server unreachable (${error.message}); retrying in ${(delay / 1000).toFixed(1)} s`);
  }
  setTimeout(poll, delay);
}

void poll();

// The key and range explorer: the committed and the uncommitted view of the same keys side by
// side, each value with the Position it was served at, rows where the two differ highlighted.
// Each column is fed by its own `changes` subscription (readCommitted true / false) with
// `initial: true`, so every (re)subscription starts from the current state of that view and
// nothing is shown in the committed column that the server did not serve as committed.
//
// The uncommitted subscription follows the uncommitted view: an event per write as it is
// processed, and, when a transaction is rolled back, an event per dropped key with the value now
// visible (docs/engine.md, "What the change feeds deliver"). The column also reads the
// uncommitted view of the keys in sight twice a second (`getMany`/`range` with readCommitted:
// false), which re-syncs it after a resubscription gap. The committed column is fed by its
// subscription alone: committed changes are exact and never roll back.
//
// Those reads go through the gateway's routing, so each partition of their answer says who
// answered it (PartitionResult): the active task or a standby replica (with its lag), on which
// instance (servedBy), or why none could (the failure, with the owner and the standbys it names).
// The explorer lists that under the table; rows of a partition kept here as a standby (which the
// subscriptions then follow) carry a "standby" badge.
import { describeErrors, errorCode, query, subscribe } from './graphql-client.js';
import { answeredBy, replicaBadge } from './replicas.js';

const CHANGES = `subscription DashboardChanges($store: String!, $keys: [Key!], $from: Key, $to: Key, $readCommitted: Boolean!) {
  changes(store: $store, keys: $keys, from: $from, to: $to, readCommitted: $readCommitted, initial: true) {
    key value deleted partition initial position
  }
}`;

// Endings that subscribing again cannot cure until the selection changes: say so and wait.
// Anything else (a revoked partition, an overflow, a server going away, NOT_STARTED) is retried.
const PERMANENT = new Set([
  'INVALID_KEY', 'INVALID_ARGUMENT', 'INVALID_RANGE', 'PAGE_SIZE_EXCEEDED',
  'GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED', 'QUERY_TOO_DEEP', 'QUERY_TOO_COSTLY',
  'TOO_MANY_ALIASES', 'TOO_MANY_DIRECTIVES', 'TOO_MANY_TOKENS', 'ENCODE_FAILED', 'KEY_TOO_LARGE',
]);

// Who answered each partition of a read. Nothing to register for the gateway's fast path: it
// learns every query text yoga has validated once (src/graphql/known-operations.ts).
const PARTITION_FIELDS = 'partition position standby lag { offsets timeMs } servedBy failure { reason message owner standbys }';

const PEEK_KEYS = `query DashboardPeekKeys($store: String!, $keys: [Key!]!) {
  getMany(store: $store, keys: $keys, readCommitted: false) {
    entries { key value found partition failure { reason } }
    partitions { ${PARTITION_FIELDS} }
  }
}`;

const PEEK_RANGE = `query DashboardPeekRange($store: String!, $from: Key, $to: Key, $first: Int!) {
  range(store: $store, from: $from, to: $to, first: $first, readCommitted: false) {
    edges { node { key value partition } }
    pageInfo { hasNextPage }
    partitions { ${PARTITION_FIELDS} }
  }
}`;

const PEEK_MS = 500;
const COLUMNS = ['committed', 'uncommitted'];
const MAX_RETRY_MS = 5_000;
// A store that is not there may come: an instance lists its stores once it has started (or a
// new version of the application is deployed). Said as an error until the overview lists it.
const ABSENT_STORE_CHECK_MS = 1_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The GraphQL form of a typed-in key for the store's key serde (the Key scalar's rules). */
export function keyVariable(text, serde) {
  switch (serde) {
    case 'int32': case 'sortableInt32': case 'float64': case 'sortableFloat64': {
      const n = Number(text);
      return text.trim() !== '' && Number.isFinite(n) ? n : text; // else the server says INVALID_KEY
    }
    case 'json':
      try { return JSON.parse(text); } catch { return text; }
    default:
      return text;
  }
}

/** "topic[p]@offset" for the components of `partition` (the full Position is the cell's title). */
function positionText(position, partition) {
  if (position == null) return '';
  const parts = [];
  for (const [topic, partitions] of Object.entries(position)) {
    const offset = partitions[String(partition)];
    if (offset !== undefined) parts.push(`${topic}[${partition}]@${offset}`);
  }
  return parts.join(' ');
}

function valueText(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function compareKeys(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = typeof a === 'string' ? a : JSON.stringify(a);
  const y = typeof b === 'string' ? b : JSON.stringify(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** One column's subscription, subscribed again after every ending that is not permanent. */
class Feed {
  constructor(endpoint, column, explorer) {
    this.endpoint = endpoint;
    this.column = column;
    this.explorer = explorer;
    this.generation = 0;
    this.controller = null;
  }

  start(variables) {
    this.stop();
    void this.run(this.generation, variables);
  }

  stop() {
    this.generation += 1;
    this.controller?.abort();
    this.controller = null;
  }

  async run(generation, variables) {
    const { explorer, column } = this;
    let failures = 0;
    while (generation === this.generation) {
      this.controller = new AbortController();
      explorer.setStatus(column, failures === 0 ? 'connecting' : 'reconnecting');
      const ending = await subscribe(this.endpoint, CHANGES, { ...variables, readCommitted: column === 'committed' }, {
        signal: this.controller.signal,
        onOpen: () => {
          if (generation !== this.generation) return;
          explorer.reset(column);
          explorer.setStatus(column, 'live');
        },
        onResult: (result) => {
          if (generation !== this.generation) return;
          if (result.data?.changes) {
            failures = 0;
            explorer.apply(column, result.data.changes);
          }
        },
      });
      if (generation !== this.generation || ending.end === 'aborted') return;
      explorer.markStale(column);
      const code = errorCode(ending.errors?.[0]);
      if (ending.errors !== undefined && PERMANENT.has(code)) {
        explorer.setStatus(column, 'error', describeErrors(ending.errors));
        return;
      }
      if (code === 'STORE_NOT_FOUND') {
        explorer.setStatus(column, 'error', `${describeErrors(ending.errors)}; subscribing again when the instance lists it`);
        do await sleep(ABSENT_STORE_CHECK_MS);
        while (generation === this.generation && !explorer.stores().has(variables.store));
        failures = 0;
        continue;
      }
      failures += 1;
      const delay = Math.min(MAX_RETRY_MS, 250 * 2 ** Math.min(failures, 5));
      let why;
      if (ending.end === 'dropped') why = 'connection to the server lost';
      else if (ending.errors !== undefined) why = `ended: ${describeErrors(ending.errors)}`;
      else why = 'ended by the server';
      explorer.setStatus(column, 'reconnecting', `${why}; subscribing again in ${(delay / 1000).toFixed(1)} s`);
      await sleep(delay);
    }
  }
}

export class Explorer {
  /**
   * @param {string} endpoint the GraphQL endpoint
   * @param {HTMLElement} root the explorer section
   * @param {() => Map<string, {keySerde: string}>} stores the stores as last polled
   */
  constructor(endpoint, root, stores) {
    this.endpoint = endpoint;
    this.root = root;
    this.stores = stores;
    this.form = root.querySelector('#explorer-form');
    this.tbody = root.querySelector('#explorer tbody');
    this.statusLine = root.querySelector('#explorer-status');
    this.answersLine = root.querySelector('#answered-by');
    // servedBy names this page's own instance by its advertised URL: the endpoint, when the page reaches it the same way.
    this.selfUrl = new URL(endpoint, location.href).href;
    this.feeds = Object.fromEntries(COLUMNS.map((c) => [c, new Feed(endpoint, c, this)]));
    this.status = { committed: { state: 'idle' }, uncommitted: { state: 'idle' } };
    this.rows = new Map();
    this.selection = null;
    this.renderPending = false;
    // Every cell remembers when it was last set; a read answers only for cells not set since it was asked.
    this.sequence = 0;
    this.peekGeneration = 0;
    this.form.addEventListener('change', () => this.showModeFields());
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.watch(this.readForm());
    });
    this.showModeFields();
  }

  mode() {
    return this.form.elements.mode.value;
  }

  showModeFields() {
    const keys = this.mode() === 'keys';
    this.form.querySelector('.key-fields').hidden = !keys;
    this.form.querySelector('.range-fields').hidden = keys;
  }

  readForm() {
    const f = this.form.elements;
    return {
      store: f.store.value.trim(),
      mode: this.mode(),
      keys: f.keys.value,
      from: f.from.value,
      to: f.to.value,
      limit: Math.max(1, Math.min(500, Number(f.limit.value) || 25)),
    };
  }

  /** Fills the form (from the URL's fragment) without watching. */
  fill(selection) {
    const f = this.form.elements;
    if (selection.store !== undefined) f.store.value = selection.store;
    if (selection.mode === 'keys' || selection.mode === 'range') f.mode.value = selection.mode;
    for (const name of ['keys', 'from', 'to', 'limit']) if (selection[name] !== undefined) f[name].value = selection[name];
    this.showModeFields();
  }

  watching() {
    return this.selection !== null;
  }

  /** Starts both subscriptions for a selection (and puts it in the URL, to share or reload). */
  watch(selection) {
    for (const feed of Object.values(this.feeds)) feed.stop();
    this.peekGeneration += 1;
    this.rows.clear();
    this.showAnswers(null);
    this.selection = selection;
    const params = new URLSearchParams({ store: selection.store, mode: selection.mode, limit: String(selection.limit) });
    if (selection.mode === 'keys') params.set('keys', selection.keys);
    else {
      if (selection.from !== '') params.set('from', selection.from);
      if (selection.to !== '') params.set('to', selection.to);
    }
    history.replaceState(null, '', `#${params}`);
    if (selection.store === '') {
      this.selection = null;
      this.setStatus('committed', 'error', 'name a store');
      return;
    }
    const serde = this.stores().get(selection.store)?.keySerde;
    const variables = { store: selection.store, keys: null, from: null, to: null };
    if (selection.mode === 'keys') {
      const keys = selection.keys.split(',').map((k) => k.trim()).filter((k) => k !== '');
      if (keys.length === 0) {
        this.selection = null;
        this.setStatus('committed', 'error', 'name at least one key');
        return;
      }
      variables.keys = keys.map((k) => keyVariable(k, serde));
      this.keyOrder = variables.keys.map((k) => JSON.stringify(k));
    } else {
      if (selection.from !== '') variables.from = keyVariable(selection.from, serde);
      if (selection.to !== '') variables.to = keyVariable(selection.to, serde);
      this.keyOrder = null;
    }
    this.render();
    for (const feed of Object.values(this.feeds)) feed.start(variables);
    void this.peek(this.peekGeneration, variables, selection.limit);
  }

  /** A (re)subscription was accepted: its initial entries replace what the column showed. */
  reset(column) {
    for (const [id, row] of this.rows) {
      delete row[column];
      row.stale = row.stale?.filter((c) => c !== column);
      if (!COLUMNS.some((c) => row[c] !== undefined)) this.rows.delete(id);
    }
    this.scheduleRender();
  }

  /** The column's subscription ended: keep its values, greyed, until the next one starts. */
  markStale(column) {
    for (const row of this.rows.values()) row.stale = [...new Set([...(row.stale ?? []), column])];
    this.scheduleRender();
  }

  /** Reads the uncommitted view of the keys in sight, twice a second, while its subscription is live. */
  async peek(generation, variables, limit) {
    const keys = variables.keys;
    while (generation === this.peekGeneration) {
      await sleep(PEEK_MS);
      if (generation !== this.peekGeneration || this.status.uncommitted.state !== 'live') continue;
      const asked = this.sequence;
      let result;
      try {
        result = keys === null
          ? await query(this.endpoint, PEEK_RANGE, { store: variables.store, from: variables.from, to: variables.to, first: limit })
          : await query(this.endpoint, PEEK_KEYS, { store: variables.store, keys });
      } catch {
        continue; // the server is away: the subscriptions say so
      }
      if (generation !== this.peekGeneration || this.status.uncommitted.state !== 'live' || result.data == null) continue;
      if (keys === null) this.applyRangeRead(asked, result.data.range);
      else this.applyKeysRead(asked, result.data.getMany);
      this.showAnswers((keys === null ? result.data.range : result.data.getMany).partitions);
    }
  }

  /** A read's answer for one key, unless the cell was set after the read was asked. */
  applyRead(asked, key, cell) {
    const id = JSON.stringify(key);
    let row = this.rows.get(id);
    if ((row?.uncommitted?.seq ?? 0) > asked) return;
    if (cell === null) {
      if (row === undefined) return;
      delete row.uncommitted;
      if (!COLUMNS.some((c) => row[c] !== undefined)) this.rows.delete(id);
      return;
    }
    if (row === undefined) {
      row = { key };
      this.rows.set(id, row);
    }
    row.uncommitted = { ...cell, seq: ++this.sequence };
  }

  applyKeysRead(asked, answer) {
    const positions = new Map(answer.partitions.map((p) => [p.partition, p.position]));
    for (const entry of answer.entries) {
      if (entry.failure != null) continue;
      this.applyRead(asked, entry.key, { deleted: !entry.found, value: entry.value, position: positions.get(entry.partition), partition: entry.partition });
    }
    this.scheduleRender();
  }

  applyRangeRead(asked, page) {
    const positions = new Map(page.partitions.map((p) => [p.partition, p.position]));
    const present = new Set();
    for (const { node } of page.edges) {
      present.add(JSON.stringify(node.key));
      this.applyRead(asked, node.key, { deleted: false, value: node.value, position: positions.get(node.partition), partition: node.partition });
    }
    // Keys the page covers (all of them, or up to its last key) but did not return are absent now.
    const last = page.edges.at(-1)?.node.key;
    const failed = new Set(page.partitions.filter((p) => p.position == null).map((p) => p.partition));
    for (const [id, row] of [...this.rows]) {
      if (present.has(id) || row.uncommitted === undefined || failed.has(row.uncommitted.partition)) continue;
      if (page.pageInfo.hasNextPage && (last === undefined || compareKeys(row.key, last) > 0)) continue;
      this.applyRead(asked, row.key, null);
    }
    this.scheduleRender();
  }

  apply(column, change) {
    const id = JSON.stringify(change.key);
    let row = this.rows.get(id);
    if (row === undefined) {
      if (change.deleted && this.keyOrder === null) return; // a range shows present entries only
      row = { key: change.key };
      this.rows.set(id, row);
    }
    if (change.deleted && this.keyOrder === null) delete row[column];
    else row[column] = { deleted: change.deleted, value: change.value, position: change.position, partition: change.partition, seq: ++this.sequence };
    if (!COLUMNS.some((c) => row[c] !== undefined)) this.rows.delete(id);
    this.scheduleRender();
  }

  /** Lists who answered each partition of the last read (null: nothing read yet for this selection). */
  showAnswers(partitions) {
    const line = this.answersLine;
    if (line === null) return;
    if (partitions == null || partitions.length === 0) {
      line.hidden = true;
      line.replaceChildren();
      return;
    }
    const items = [...partitions].sort((a, b) => a.partition - b.partition).map((outcome) => {
      const answer = answeredBy(outcome, this.selfUrl);
      const span = document.createElement('span');
      span.className = 'answer';
      span.dataset.partition = String(outcome.partition);
      span.dataset.kind = answer.kind;
      span.textContent = `${outcome.partition}: ${answer.text}`;
      span.title = answer.title;
      return span;
    });
    const label = document.createElement('span');
    label.className = 'muted';
    label.textContent = 'last read answered, per partition —';
    line.replaceChildren(label, ...items);
    line.hidden = false;
  }

  /** True when the store's partition is kept here as a standby replica (as last polled). */
  standbyHere(partition) {
    if (partition === undefined || this.selection === null) return false;
    const local = this.stores().get(this.selection.store)?.localPartitions?.find((p) => p.partition === partition);
    return local !== undefined && local.active === false;
  }

  setStatus(column, state, message) {
    this.status[column] = { state, message };
    const states = COLUMNS.map((c) => this.status[c].state);
    const overall = states.includes('error') ? 'error' : states.includes('reconnecting') ? 'reconnecting'
      : states.includes('connecting') ? 'connecting' : states.every((s) => s === 'live') ? 'live' : 'idle';
    const messages = COLUMNS.filter((c) => this.status[c].message !== undefined);
    // One problem of both columns (a missing store, the server away) is said once.
    const texts = messages.length === 2 && this.status.committed.message === this.status.uncommitted.message
      ? [this.status.committed.message]
      : messages.map((c) => `${c}: ${this.status[c].message}`);
    const line = this.statusLine;
    line.dataset.state = overall;
    if (overall === 'live') line.textContent = `live: ${this.rows.size} key(s) in view`;
    else if (texts.length > 0) line.textContent = texts.join(' · ');
    else line.textContent = overall === 'idle' ? 'Pick a store and watch a range or some keys.' : `${overall}…`;
  }

  scheduleRender() {
    if (this.renderPending) return;
    this.renderPending = true;
    requestAnimationFrame(() => {
      this.renderPending = false;
      this.render();
    });
  }

  orderedRows() {
    if (this.keyOrder !== null && this.keyOrder !== undefined) return this.keyOrder.map((id) => this.rows.get(id)).filter((r) => r !== undefined);
    return [...this.rows.values()].sort((a, b) => compareKeys(a.key, b.key)).slice(0, this.selection?.limit ?? 25);
  }

  render() {
    const rows = this.orderedRows();
    const fragment = document.createDocumentFragment();
    for (const row of rows) {
      const tr = document.createElement('tr');
      tr.dataset.key = JSON.stringify(row.key);
      const keyCell = document.createElement('td');
      keyCell.className = 'key';
      keyCell.textContent = valueText(row.key);
      const partition = row.committed?.partition ?? row.uncommitted?.partition;
      if (this.standbyHere(partition)) {
        tr.dataset.replica = 'standby';
        const badge = replicaBadge(false);
        badge.title = `partition ${partition} is kept here as a standby replica: its subscriptions follow the standby`;
        keyCell.append(' ', badge);
      }
      tr.append(keyCell);
      const shown = COLUMNS.map((column) => {
        const cell = row[column];
        const td = document.createElement('td');
        td.className = 'value';
        td.dataset.column = column;
        if (row.stale?.includes(column)) td.classList.add('stale');
        if (cell === undefined || cell.deleted) {
          td.classList.add('absent');
          td.dataset.absent = 'true';
          td.textContent = cell === undefined ? '…' : 'absent';
          if (cell !== undefined) td.append(positionSpan(cell));
          tr.append(td);
          return cell === undefined ? undefined : null;
        }
        td.dataset.json = JSON.stringify(cell.value);
        td.textContent = valueText(cell.value);
        td.append(positionSpan(cell));
        tr.append(td);
        return td.dataset.json;
      });
      if (shown[0] !== undefined && shown[1] !== undefined && shown[0] !== shown[1]) tr.classList.add('diff');
      fragment.append(tr);
    }
    this.tbody.replaceChildren(fragment);
    if (this.status.committed.state === 'live' && this.status.uncommitted.state === 'live') {
      const more = this.keyOrder == null && this.rows.size > rows.length ? ` (showing the first ${rows.length})` : '';
      this.statusLine.textContent = `live: ${this.rows.size} key(s) in view${more}`;
    }
  }
}

function positionSpan(cell) {
  const span = document.createElement('span');
  span.className = 'position';
  span.textContent = ` · ${positionText(cell.position, cell.partition)}`;
  span.title = JSON.stringify(cell.position);
  return span;
}

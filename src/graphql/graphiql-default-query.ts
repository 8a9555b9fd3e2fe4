/**
 * The query GraphiQL opens with: the running application's own stores, read committed and
 * uncommitted side by side, instead of yoga's generic welcome text. It is derived when the
 * page is served, from the state provider — whatever stores the application defines, and a
 * key one of its local partitions holds — so it runs as it stands for any application.
 */
import { toGraphQLValue } from './key-codec.js';
import type { StateProvider, StoreDescriptor } from '../query/state-provider.js';

/** Entries per range in the example. */
const PAGE = 5;

/**
 * A key of `store` held by a local partition (uncommitted view, so a key processed but not yet
 * committed counts too) in its GraphQL form (key-codec.ts: int64 as decimal text, bytes as
 * base64, which the Key argument takes back); undefined when none is found, or for a json key
 * that is neither a string nor a number (the ranges show those).
 */
async function sampleKey(provider: StateProvider, store: StoreDescriptor): Promise<string | number | undefined> {
  for (let partition = 0; partition < store.partitions; partition += 1) {
    const local = provider.localPartition(store.name, partition);
    if (local === undefined) continue;
    const view = local.store.view({ readCommitted: false });
    try {
      for await (const { key } of view.range({ limit: 1 })) {
        const value = toGraphQLValue(store.keySerde.deserialize(key));
        if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) return value;
        return undefined;
      }
    } finally {
      await view.close();
    }
  }
  return undefined;
}

/**
 * A GraphQL literal for a string or a number (JSON's string escapes are GraphQL's), with `<`
 * written `\u003c`: the query travels into GraphiQL's page inside an inline <script> (yoga's
 * renderer writes its options there as JSON, which leaves `<` as it is), and a key is anyone's
 * data — a key holding `</script><script>…` ran its script on the gateway's origin when an
 * operator opened GraphiQL (audit, 2026-12-06). GraphQL reads the escape back as the same key.
 */
function literal(value: string | number): string {
  return typeof value === 'number' ? String(value) : scriptSafe(JSON.stringify(value));
}

function scriptSafe(text: string): string {
  return text.replace(/</g, '\\u003c');
}

export async function graphiqlDefaultQuery(provider: StateProvider): Promise<string> {
  const stores = provider.stores();
  const first = stores[0];
  if (first === undefined) {
    return ['# iqgate: this application defines no store yet.', '{', '  instance { state }', '  stores { name partitions keySerde valueSerde }', '}', ''].join('\n');
  }
  let key: string | number | undefined;
  try {
    key = await sampleKey(provider, first);
  } catch {
    key = undefined; // a partition closing under us: the ranges alone still make the example
  }
  const store = literal(first.name);
  const names = stores.map((s) => scriptSafe(`"${s.name}"`)).join(', ');
  const lines = [
    `# iqgate: the stores of this application: ${names}.`,
    '# The same reads side by side: committed (the store as of the last commit) and',
    '# uncommitted (what processing has done since, not committed yet: it may still abort).',
    '{',
  ];
  if (key !== undefined) {
    const k = literal(key);
    lines.push(
      `  committed: get(store: ${store}, key: ${k}, readCommitted: true) { value position }`,
      `  uncommitted: get(store: ${store}, key: ${k}, readCommitted: false) { value position }`,
    );
  }
  lines.push(
    `  committedRange: range(store: ${store}, first: ${PAGE}, readCommitted: true) { edges { node { key value } } pageInfo { hasNextPage } }`,
    `  uncommittedRange: range(store: ${store}, first: ${PAGE}, readCommitted: false) { edges { node { key value } } pageInfo { hasNextPage } }`,
    '}',
    '',
  );
  return lines.join('\n');
}

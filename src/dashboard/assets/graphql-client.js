// The page's GraphQL client: queries by POST, subscriptions over SSE (yoga's "distinct
// connections" mode: `event: next` carries an execution result, `event: complete` ends it), read
// with fetch streaming rather than EventSource, so the page sees HTTP errors and coded GraphQL
// errors itself and decides when to subscribe again (EventSource would silently reconnect).

/** A GraphQL error's code (extensions.code), or undefined. */
export function errorCode(error) {
  return error?.extensions?.code;
}

/** "message (CODE)" for the first of a result's errors. */
export function describeErrors(errors) {
  const first = errors?.[0];
  if (first === undefined) return 'unknown error';
  const code = errorCode(first);
  return code === undefined ? first.message : `${first.message} (${code})`;
}

/**
 * Runs a query; resolves with the result ({ data, errors }). Rejects (a TypeError from fetch,
 * or an Error for a non-JSON answer) when the server cannot be reached.
 */
export async function query(endpoint, document, variables = {}, signal) {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify({ query: document, variables }),
    signal,
  });
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${response.status} from ${endpoint}: not a GraphQL answer`);
  }
}

/** Splits an SSE byte stream into events ({ event, data }), per the HTML spec's parsing rules. */
async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let event = 'message';
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let newline;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) yield { event, data: data.join('\n') };
        event = 'message';
        data = [];
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const fieldValue = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = fieldValue;
        else if (field === 'data') data.push(fieldValue);
      }
    }
  }
}

/**
 * Runs one subscription until it ends. Calls onOpen() once the server accepted it and onResult()
 * with each execution result. Resolves with how it ended:
 * - { end: 'complete', errors }: the server completed it; `errors` are those of its last result
 *   (a subscription ended by a coded error sends it as its last result);
 * - { end: 'refused', errors, status }: the server answered without a stream (a bad request);
 * - { end: 'dropped' }: the stream ended without `complete`, or the server could not be reached;
 * - { end: 'aborted' }: `signal` aborted it.
 */
export async function subscribe(endpoint, document, variables, { signal, onOpen, onResult }) {
  let response;
  try {
    response = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: document, variables }),
      signal,
    });
  } catch {
    return { end: signal?.aborted ? 'aborted' : 'dropped' };
  }
  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('text/event-stream') || response.body === null) {
    const body = await response.json().catch(() => null);
    return { end: 'refused', status: response.status, errors: body?.errors ?? [{ message: `HTTP ${response.status}` }] };
  }
  onOpen();
  let lastErrors;
  try {
    for await (const { event, data } of readEvents(response.body)) {
      if (event === 'complete') return { end: 'complete', errors: lastErrors };
      if (event !== 'next' && event !== 'message') continue;
      const result = JSON.parse(data);
      lastErrors = result.errors;
      onResult(result);
    }
  } catch {
    // a broken connection or an abort
  }
  return { end: signal?.aborted ? 'aborted' : 'dropped' };
}

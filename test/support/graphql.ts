/** A GraphQL request over real HTTP, as a client sends it; GraphQL errors fail the test. */
export async function postGraphQL<T>(url: string, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: T; errors?: unknown[] };
  if (body.errors !== undefined) throw new Error(`GraphQL errors: ${JSON.stringify(body.errors)}`);
  return body.data as T;
}

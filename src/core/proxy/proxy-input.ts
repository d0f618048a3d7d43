
/**
 * `args` of a proxied request (docs/policies.md "What a condition can read"): the query parameters (a repeated
 * one as a list), then the top-level fields of the body when it was read (body-fields.ts; where
 * both name an argument a policy reads, they must agree); `path` and `method` are set last, so
 * neither can be overridden by the request.
 */
export function proxyArgs(path: string, method: string, query: string, body: Record<string, unknown> | undefined): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  if (query !== '') addQuery(args, query);
  if (body !== undefined) Object.assign(args, body);
  args.path = `/${path}`;
  args.method = method;
  return args;
}

function addQuery(args: Record<string, unknown>, query: string): void {
  for (const [key, value] of new URLSearchParams(query)) addArg(args, key, value);
}

function addArg(args: Record<string, unknown>, key: string, value: string): void {
  const existing = Object.hasOwn(args, key) ? args[key] : undefined;
  if (existing === undefined) args[key] = value;
  else if (Array.isArray(existing)) existing.push(value);
  else args[key] = [existing, value];
}

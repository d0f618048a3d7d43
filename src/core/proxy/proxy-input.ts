import { parameterFields } from './parameter-fields';

/**
 * `args` of a proxied request (docs/policies.md "What a condition can read"): the query
 * parameters as upstream frameworks read them (parameter-fields.ts: a repeated name or a bracket
 * name is a list), then the top-level fields of the body when it was read (body-fields.ts; where
 * both name an argument a policy reads, they must agree); `path` and `method` are set last, so
 * neither can be overridden by the request. A null-prototype object: a field named `__proto__`
 * is only a field.
 */
export function proxyArgs(path: string, method: string, query: string, body: Record<string, unknown> | undefined): Record<string, unknown> {
  const args = queryFields(query);
  if (body !== undefined) Object.assign(args, body);
  args.path = `/${path}`;
  args.method = method;
  return args;
}

/** The query's fields (parameter-fields.ts); empty for no query. */
export function queryFields(query: string): Record<string, unknown> {
  return parameterFields(query === '' ? [] : new URLSearchParams(query));
}

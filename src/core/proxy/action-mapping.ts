/**
 * The verb of a request (docs/proxy.md "Actions"): GET read; POST, PUT, PATCH write; DELETE
 * delete. HEAD and OPTIONS read nothing they could change, so they map to read; any other
 * method maps to write, the verb policies restrict most.
 */
export function verbOf(method: string): 'read' | 'write' | 'delete' {
  switch (method) {
    case 'GET':
    case 'HEAD':
    case 'OPTIONS':
      return 'read';
    case 'DELETE':
      return 'delete';
    default:
      return 'write';
  }
}

/** `<verb>:<path>`, or the X-Service-Action header's value when it is present. */
export function actionOf(verb: string, path: string, override: string | undefined): string {
  return override !== undefined && override !== '' ? override : `${verb}:${path}`;
}

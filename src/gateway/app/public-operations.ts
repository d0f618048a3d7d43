import type { OpenAPIObject } from '@nestjs/swagger';
import { PUBLIC_OPERATION_EXTENSION } from '../../core/common/auth-decorators';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/**
 * Gives every `@Public()` operation `security: []`: in OpenAPI an operation with no `security`
 * inherits the document's, while an empty list says that it takes no credentials at all.
 */
export function declarePublicOperations(document: OpenAPIObject): void {
  for (const item of Object.values(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method] as (Record<string, unknown> & { security?: unknown }) | undefined;
      if (operation?.[PUBLIC_OPERATION_EXTENSION] !== true) continue;
      delete operation[PUBLIC_OPERATION_EXTENSION];
      operation.security = [];
    }
  }
}

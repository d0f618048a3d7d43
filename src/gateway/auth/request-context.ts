import type { AdapterPrincipal } from '../access/api-keys.service';
import type { AuthenticatedAgent } from '../../core/decision/agent-authenticator';
import type { AdminPrincipal } from '../common/admin-principal';

declare module 'express-serve-static-core' {
  interface Request {
    /** Trace id of the request: the client's X-Trace-ID or a new one. */
    traceId: string;
    /** Set by the auth guard on admin routes. */
    admin?: AdminPrincipal;
    /** Set by the auth guard on agent-token routes. */
    agent?: AuthenticatedAgent;
    /** Set by the auth guard on adapter routes. */
    adapter?: AdapterPrincipal;
  }
}

import type { AdminPrincipal } from './admin-principal';

declare module 'express-serve-static-core' {
  interface Request {
    /** Trace id of the request: the client's X-Trace-ID or a new one. */
    traceId: string;
    /** Set by the auth guard on admin routes. */
    admin?: AdminPrincipal;
  }
}

import type { Metadata } from '@grpc/grpc-js';
import type { AdapterPrincipal } from '../access/api-keys.service';

/** Principals the auth guard proved for gRPC calls, by the call's metadata object. */
const principals = new WeakMap<Metadata, AdapterPrincipal>();

/** Remembers the adapter a gRPC call authenticated as. */
export function setGrpcPrincipal(metadata: Metadata, principal: AdapterPrincipal): void {
  principals.set(metadata, principal);
}

/** The adapter the guard proved for this call; a handler reached without one is a bug, so it throws. */
export function grpcPrincipal(metadata: Metadata): AdapterPrincipal {
  const principal = principals.get(metadata);
  if (principal === undefined) throw new Error('gRPC handler reached without an authenticated principal');
  return principal;
}

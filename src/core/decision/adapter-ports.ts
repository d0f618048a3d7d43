import type { LinkedDecision } from './decision-links';

/*
 * What the adapter endpoints (pdp/: AdapterHttpHandler, OutcomeRecorder) need from their host, as
 * small interfaces: the gateway binds them to API keys and managed identities in PostgreSQL and
 * to the audit trail; the edge sidecar to its bundle's API keys and its own recent decisions.
 */

/** What an adapter presents: `X-Api-Key`, or `Authorization: Bearer` from its identity provider. */
export interface AdapterCredentials {
  apiKey?: string;
  authorization?: string;
}

/** Whom an adapter's call is for. */
export interface AdapterIdentity {
  orgId: string;
}

export interface AdapterAuthentication {
  /** The adapter's organization, or a 401 AppError. */
  authenticate(credentials: AdapterCredentials): Promise<AdapterIdentity>;
}

export interface OutcomeLedger {
  /** A decision made elsewhere (another instance, before a restart), or null when none is known. */
  findDecision(orgId: string, decisionId: string): Promise<LinkedDecision | null>;
  /** Claims events' eventIds, each for its audit entry: the eventIds newly claimed (the others were recorded before: replays). */
  claim(orgId: string, claims: ReadonlyArray<{ eventId: string; auditId: string }>): Promise<Set<string>>;
  /** How many days of audit entries the organization keeps (-1: unlimited): older events are refused. */
  auditRetentionDays(orgId: string): Promise<number>;
}

export const ADAPTER_AUTHENTICATION = Symbol('AdapterAuthentication');
export const OUTCOME_LEDGER = Symbol('OutcomeLedger');

import { Injectable } from '@nestjs/common';
import { AppError } from '../core/common/app-error';
import { ErrorCode } from '../core/common/error-code';
import type { AdapterAuthentication, AdapterCredentials, AdapterIdentity, OutcomeLedger } from '../core/decision/adapter-ports';
import type { LinkedDecision } from '../core/decision/decision-links';
import { hashAdminToken } from '../core/edge-protocol/secret-hash';
import { UNLIMITED } from '../core/config/plans';
import { BundleStore } from './bundle-store';

/**
 * Adapters at the edge authenticate with an API key of the bundle's organization (the bundle
 * carries the keys' hashes, revocations included as of the last sync). Managed-identity tokens
 * need the identity provider and the gateway's registry: they are taken by the gateway only.
 */
@Injectable()
export class BundleApiKeys implements AdapterAuthentication {
  constructor(private readonly store: BundleStore) {}

  authenticate({ apiKey }: AdapterCredentials): Promise<AdapterIdentity> {
    if (apiKey === undefined || apiKey === '') return Promise.reject(new AppError(ErrorCode.Unauthorized, 'Missing X-Api-Key'));
    if (!this.store.hasApiKey(hashAdminToken(apiKey))) return Promise.reject(new AppError(ErrorCode.Unauthorized, 'Invalid or revoked API key'));
    return Promise.resolve({ orgId: this.store.bundle!.orgId });
  }
}

/**
 * The edge's outcome ledger: it knows only its own recent decisions (RecentDecisions), and
 * whether an eventId was seen before is known only at the gateway, which records each once when
 * the sidecar forwards its entries.
 */
export class EdgeOutcomes implements OutcomeLedger {
  findDecision(): Promise<LinkedDecision | null> {
    return Promise.resolve(null);
  }

  claim(_orgId: string, claims: ReadonlyArray<{ eventId: string }>): Promise<Set<string>> {
    return Promise.resolve(new Set(claims.map((claim) => claim.eventId)));
  }

  /** The bundle does not carry the plan: the gateway's retention applies to what the sidecar forwards. */
  auditRetentionDays(): Promise<number> {
    return Promise.resolve(UNLIMITED);
  }
}

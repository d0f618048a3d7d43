import { Inject, Injectable } from '@nestjs/common';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { AppConfig } from '../../core/config/app-config';
import { POLICY_SOURCE, PolicySource } from '../../core/decision/decision-sources';
import { GatewayBudgetLedger } from '../decision/gateway-budget-ledger';
import type { BudgetLeaseRequestDto, BudgetLeaseReturnDto, BudgetLeaseReturnView, BudgetLeaseView } from './budget-leases.dto';

/**
 * Budget leases for edge sidecars (docs/sidecar.md "Budgets"): a slice of a budget's total,
 * reserved at the gateway's ledger (Redis with REDIS_URL) for BUDGET_LEASE_TTL, which the sidecar
 * spends offline and returns with what it spent. The limit and window are read from the
 * organization's policies in force, never from the sidecar; a key outside the organization
 * is refused, and a lease is returned only by the credential that took it.
 */
@Injectable()
export class BudgetLeasesService {
  constructor(
    @Inject(POLICY_SOURCE) private readonly policies: PolicySource,
    private readonly ledger: GatewayBudgetLedger,
    private readonly config: AppConfig,
  ) {}

  async take(admin: AdminPrincipal, request: BudgetLeaseRequestDto): Promise<BudgetLeaseView> {
    ownKey(admin, request.key);
    const { set } = await this.policies.get(admin.orgId);
    const site = set.budgetOf(request.key);
    if (site === undefined) throw AppError.notFound('Budget', request.key);
    const { percent, ttlMs } = this.config.budgetLeases;
    const least = Math.max(request.least, Number.MIN_VALUE);
    const want = Math.max(least, (site.limit * percent) / 100);
    const answer = await this.ledger.lease(request.key, admin.tokenId, least, want, site.limit, site.windowMs, ttlMs, Date.now());
    if ('retryAfterMs' in answer) {
      throw new AppError(ErrorCode.BudgetExceeded, 'The budget has no room for a lease', { retry_after: Math.max(1, Math.ceil(answer.retryAfterMs / 1000)), limit: site.label });
    }
    return { leaseId: answer.id, key: request.key, granted: answer.granted, expiresInMs: ttlMs };
  }

  async giveBack(admin: AdminPrincipal, request: BudgetLeaseReturnDto): Promise<BudgetLeaseReturnView> {
    ownKey(admin, request.key);
    if (!request.leaseId.startsWith(`${admin.tokenId}/`)) throw AppError.notFound('Lease', request.leaseId);
    const hold = { key: request.key, id: request.leaseId, cost: 0, limit: 0, windowMs: 0 };
    return { returned: await this.ledger.settle(hold, request.spent, Date.now()) };
  }
}

/** Every budget key names its organization first (budgetKeyPrefix): a sidecar leases only its own. */
function ownKey(admin: AdminPrincipal, key: string): void {
  if (!key.startsWith(`bg:${encodeURIComponent(admin.orgId)}:`)) throw AppError.invalid('key must be a budget of the organization');
}

import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Logger } from 'pino';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { AuditService } from '../audit/audit.service';
import { ClusterEvents } from '../changes/cluster-events';
import { LOGGER } from '../../core/logging/logging.module';
import { OrganizationsService } from '../organizations/organizations.service';
import { PLAN_IDS, PLANS, PlanId } from '../../core/config/plans';
import { BillingMail } from './billing-mailer';
import { ConfirmationSender } from './confirmation-sender';
import { PaymentProvider, ProviderEvent } from './payment-provider';
import { PlanPrices } from './plan-prices';
import { BillingEventType, CheckoutCompleted, LIVE_STATUSES, readCheckoutCompleted, readSubscriptionChange } from './subscription-events';

/** What applying an event did, acted on once its transaction has committed. */
interface EventOutcome {
  outcome: 'applied' | 'stale' | 'ignored';
  orgId: string | null;
  change?: { action: string; previous: PlanId | null; next: PlanId; details: Record<string, unknown> };
  /** The confirmation email of a completed checkout. */
  mail?: BillingMail;
  /** Set when the checkout created the organization: its admin token went (only) into the mail. */
  createdOrgId?: string;
}

type ResolvedCheckout = CheckoutCompleted & { customerId: string };

interface SubscriptionRow {
  id: string;
  orgId: string;
  customerId: string;
  plan: PlanId;
  status: string;
  priceId: string | null;
}

/**
 * Applies the payment provider's webhook events (docs/billing.md "The webhook").
 * Each event is applied in one transaction that also records its id, so a replay changes
 * nothing; per subscription, an event older than the last one applied is ignored, so events
 * arriving out of order never roll a plan back. The organization's plan is the best plan among
 * its live subscriptions.
 */
@Injectable()
export class BillingWebhookService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly provider: PaymentProvider,
    private readonly prices: PlanPrices,
    private readonly organizations: OrganizationsService,
    private readonly audit: AuditService,
    private readonly cluster: ClusterEvents,
    private readonly confirmations: ConfirmationSender,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Verifies and applies one webhook delivery. */
  async receive(rawBody: Buffer | undefined, signature: string | undefined): Promise<void> {
    if (rawBody === undefined) throw AppError.invalid('The event must be sent as application/json');
    const event = this.provider.verifyEvent(rawBody, signature);
    // Provider calls happen before the transaction: none holds a connection while it waits.
    // Null for every other type, and for a checkout the gateway did not start.
    const checkout = event.type === BillingEventType.CheckoutCompleted ? await this.resolveCheckout(event) : null;
    const outcome = await this.dataSource.transaction(async (manager) => {
      const fresh: unknown[] = await manager.query(
        `INSERT INTO billing_events (id, type, outcome) VALUES ($1, $2, 'processing') ON CONFLICT (id) DO NOTHING RETURNING id`,
        [event.id, event.type],
      );
      if (fresh.length === 0) return null;
      const result = checkout === null ? await this.apply(manager, event) : await this.checkoutCompleted(manager, event, checkout);
      await manager.query('UPDATE billing_events SET outcome = $2, org_id = $3 WHERE id = $1', [event.id, result.outcome, result.orgId]);
      return result;
    });
    if (outcome === null) {
      this.logger.info({ eventId: event.id, type: event.type }, 'billing event already processed; replay ignored');
      return;
    }
    this.logger.info({ eventId: event.id, type: event.type, outcome: outcome.outcome, orgId: outcome.orgId }, 'billing event processed');
    await this.afterCommit(event, outcome);
  }

  private async apply(manager: EntityManager, event: ProviderEvent): Promise<EventOutcome> {
    switch (event.type) {
      case BillingEventType.SubscriptionUpdated:
      case BillingEventType.SubscriptionDeleted:
        return this.subscriptionChanged(manager, event);
      case BillingEventType.CheckoutCompleted:
        this.logger.info({ eventId: event.id }, 'checkout session without metadata.plan: not started by this gateway; acknowledged');
        return { outcome: 'ignored', orgId: null };
      default:
        this.logger.info({ eventId: event.id, type: event.type }, 'billing event type not handled; acknowledged');
        return { outcome: 'ignored', orgId: null };
    }
  }

  /** The checkout's fields, with the customer looked up or created and its email filled in where the event lacks them. */
  private async resolveCheckout(event: ProviderEvent): Promise<ResolvedCheckout | null> {
    const checkout = readCheckoutCompleted(event);
    if (checkout === null) return null;
    const customerId = checkout.customerId ?? (await this.provider.findOrCreateCustomer(checkout.email!));
    const email = checkout.email ?? (this.provider.enabled ? await this.provider.customerEmail(customerId) : null);
    return { ...checkout, customerId, email };
  }

  /** Links the customer to its organization (found or created) and sets the plan bought. */
  private async checkoutCompleted(manager: EntityManager, event: ProviderEvent, checkout: ResolvedCheckout): Promise<EventOutcome> {
    const { customerId, email } = checkout;
    let organization = await this.findOrganization(manager, customerId, email);
    let adminToken: string | null = null;
    if (organization === null) {
      if (email === null) throw AppError.invalid(`No organization has customer ${customerId}, and the event carries no email to create one for`);
      const created = await this.organizations.create({ name: email, billingEmail: email, plan: 'free', customerId }, manager);
      organization = { id: created.organization.id, plan: created.organization.plan, customerId };
      adminToken = created.adminToken;
    } else if (organization.customerId === null) {
      await manager.query('UPDATE organizations SET customer_id = $2, updated_at = now() WHERE id = $1', [organization.id, customerId]);
    }
    const previous = adminToken === null ? organization.plan : null;
    let next: PlanId = checkout.plan;
    if (checkout.subscriptionId !== null) {
      const row: SubscriptionRow = { id: checkout.subscriptionId, orgId: organization.id, customerId, plan: checkout.plan, status: 'active', priceId: null };
      if (!(await this.recordSubscription(manager, row, event.created))) return this.stale(event, organization.id);
      next = await this.recomputePlan(manager, organization.id);
    } else {
      await this.setPlan(manager, organization.id, next);
    }
    const details = { event: event.id, session: checkout.sessionId, subscription: checkout.subscriptionId, customerId, createdOrganization: adminToken !== null };
    return {
      outcome: 'applied',
      orgId: organization.id,
      change: { action: 'billing.checkout_completed', previous, next, details },
      mail: email === null ? undefined : confirmationMail(email, organization.id, next, adminToken),
      createdOrgId: adminToken === null ? undefined : organization.id,
    };
  }

  /** A subscription's new price or status (updated), or its end (deleted). */
  private async subscriptionChanged(manager: EntityManager, event: ProviderEvent): Promise<EventOutcome> {
    const change = readSubscriptionChange(event);
    const known = await this.findSubscription(manager, change.subscriptionId);
    if (known === null && this.sellsNone(change.priceIds)) {
      // Another product of the provider account: a 404 would have the provider retry it for days, then disable the endpoint.
      this.logger.info({ eventId: event.id, subscription: change.subscriptionId, prices: change.priceIds }, 'subscription of prices this gateway does not sell; acknowledged');
      return { outcome: 'ignored', orgId: null };
    }
    const orgId = known?.orgId ?? (await this.findOrganization(manager, change.customerId, null))?.id;
    if (orgId === undefined) throw new AppError(ErrorCode.NotFound, `Subscription ${change.subscriptionId} of customer ${change.customerId} not found`);
    const previous = await this.lockPlan(manager, orgId);
    const deleted = event.type === BillingEventType.SubscriptionDeleted;
    const plan = deleted ? (known?.plan ?? 'free') : this.planOfPrices(change.priceIds);
    if (plan === undefined) {
      this.logger.warn({ eventId: event.id, subscription: change.subscriptionId, prices: change.priceIds }, 'subscription has no price of a known plan; event ignored');
      return { outcome: 'ignored', orgId };
    }
    const status = deleted ? 'canceled' : change.status;
    const row: SubscriptionRow = { id: change.subscriptionId, orgId, customerId: change.customerId, plan, status, priceId: change.priceIds[0] ?? null };
    if (!(await this.recordSubscription(manager, row, event.created))) return this.stale(event, orgId);
    const next = await this.recomputePlan(manager, orgId);
    const action = deleted ? 'billing.subscription_canceled' : 'billing.subscription_updated';
    return { outcome: 'applied', orgId, change: { action, previous, next, details: { event: event.id, subscription: change.subscriptionId, status } } };
  }

  private stale(event: ProviderEvent, orgId: string): EventOutcome {
    this.logger.info({ eventId: event.id, type: event.type, orgId }, 'billing event older than the last one applied to its subscription; ignored');
    return { outcome: 'stale', orgId };
  }

  /** True when the subscription names prices and none of them is one this gateway sells. */
  private sellsNone(priceIds: string[]): boolean {
    return priceIds.length > 0 && this.planOfPrices(priceIds) === undefined;
  }

  /** The best paid plan among the prices, or undefined when none is a price this gateway sells. */
  private planOfPrices(priceIds: string[]): PlanId | undefined {
    const plans = priceIds.map((id) => this.prices.planOf(id)).filter((plan): plan is NonNullable<typeof plan> => plan !== undefined);
    return plans.length === 0 ? undefined : bestPlan(plans);
  }

  /** The organization of a customer id, else the oldest unlinked one with this billing email; locked. */
  private async findOrganization(manager: EntityManager, customerId: string, email: string | null): Promise<{ id: string; plan: PlanId; customerId: string | null } | null> {
    const byCustomer: Array<{ id: string; plan: PlanId }> = await manager.query('SELECT id, plan FROM organizations WHERE customer_id = $1 FOR UPDATE', [customerId]);
    if (byCustomer.length > 0) return { ...byCustomer[0], customerId };
    if (email === null) return null;
    const byEmail: Array<{ id: string; plan: PlanId }> = await manager.query(
      `SELECT id, plan FROM organizations WHERE customer_id IS NULL AND lower(billing_email) = lower($1) ORDER BY created_at, id LIMIT 1 FOR UPDATE`,
      [email],
    );
    return byEmail.length > 0 ? { ...byEmail[0], customerId: null } : null;
  }

  private async findSubscription(manager: EntityManager, id: string): Promise<SubscriptionRow | null> {
    const rows: Array<{ org_id: string; customer_id: string; plan: PlanId; status: string; price_id: string | null }> = await manager.query(
      'SELECT org_id, customer_id, plan, status, price_id FROM billing_subscriptions WHERE id = $1',
      [id],
    );
    if (rows.length === 0) return null;
    const [row] = rows;
    return { id, orgId: row.org_id, customerId: row.customer_id, plan: row.plan, status: row.status, priceId: row.price_id };
  }

  /**
   * Stores the subscription as of an event created at `created` (Unix seconds), unless an event
   * at least as new was applied already; false when the event is stale. Within one second the
   * later arrival wins, except that nothing revives a canceled subscription.
   */
  private async recordSubscription(manager: EntityManager, row: SubscriptionRow, created: number): Promise<boolean> {
    const current: Array<{ status: string; last_event_created: string }> = await manager.query(
      'SELECT status, last_event_created FROM billing_subscriptions WHERE id = $1 FOR UPDATE',
      [row.id],
    );
    if (current.length > 0) {
      const last = Number(current[0].last_event_created);
      if (created < last || (created === last && current[0].status === 'canceled')) return false;
    }
    await manager.query(
      `INSERT INTO billing_subscriptions (id, org_id, customer_id, plan, status, price_id, last_event_created)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (id) DO UPDATE SET org_id = EXCLUDED.org_id, customer_id = EXCLUDED.customer_id, plan = EXCLUDED.plan,
         status = EXCLUDED.status, price_id = COALESCE(EXCLUDED.price_id, billing_subscriptions.price_id),
         last_event_created = EXCLUDED.last_event_created, updated_at = now()`,
      [row.id, row.orgId, row.customerId, row.plan, row.status, row.priceId, created],
    );
    return true;
  }

  /** Sets the organization's plan to the best of its live subscriptions (free when none is live). */
  private async recomputePlan(manager: EntityManager, orgId: string): Promise<PlanId> {
    const rows: Array<{ plan: PlanId; status: string }> = await manager.query('SELECT plan, status FROM billing_subscriptions WHERE org_id = $1', [orgId]);
    const live = rows.filter((row) => LIVE_STATUSES.has(row.status)).map((row) => row.plan);
    const plan = live.length === 0 ? 'free' : bestPlan(live);
    await this.setPlan(manager, orgId, plan);
    return plan;
  }

  private async setPlan(manager: EntityManager, orgId: string, plan: PlanId): Promise<void> {
    await manager.query('UPDATE organizations SET plan = $2, updated_at = now() WHERE id = $1', [orgId, plan]);
  }

  private async lockPlan(manager: EntityManager, orgId: string): Promise<PlanId> {
    const rows: Array<{ plan: PlanId }> = await manager.query('SELECT plan FROM organizations WHERE id = $1 FOR UPDATE', [orgId]);
    return rows[0].plan;
  }

  /** The audit entry, the other instances told, the confirmation email: only for committed changes. */
  private async afterCommit(event: ProviderEvent, outcome: EventOutcome): Promise<void> {
    if (outcome.outcome !== 'applied' || outcome.orgId === null || outcome.change === undefined) return;
    const { action, previous, next, details } = outcome.change;
    this.audit.recordAdminEvent(
      { orgId: outcome.orgId, tokenId: 'system' },
      { action, reason: `payment provider event ${event.type}`, details: { ...details, previous: { plan: previous }, next: { plan: next } } },
    );
    if (previous !== next) await this.cluster.publish({ type: 'organization.changed', orgId: outcome.orgId });
    if (outcome.mail !== undefined) this.confirmations.send(outcome.mail, { orgId: outcome.orgId, createdOrgId: outcome.createdOrgId });
  }
}

function bestPlan(plans: PlanId[]): PlanId {
  return plans.reduce((best, plan) => (PLAN_IDS.indexOf(plan) > PLAN_IDS.indexOf(best) ? plan : best));
}

function confirmationMail(to: string, orgId: string, plan: PlanId, adminToken: string | null): BillingMail {
  const name = PLANS[plan].name;
  const lines = [`Thank you: your organization ${orgId} is now on the ${name} plan.`, ''];
  if (adminToken !== null) {
    lines.push(
      'A new organization was created for you. Its admin token is below; it is shown only here, so keep it safe:',
      '',
      `    ${adminToken}`,
      '',
      'Send it as the X-Admin-Token header to the admin API.',
      '',
    );
  }
  lines.push('You can manage payment details, invoices and your subscription in the customer portal (POST /billing/portal).');
  return { to, subject: `Your ${name} plan is active`, text: lines.join('\n') };
}

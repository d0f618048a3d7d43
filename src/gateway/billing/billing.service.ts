import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AppConfig } from '../../core/config/app-config';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { Organization } from '../organizations/organization.entity';
import { Plan, PLAN_IDS, PLANS } from '../../core/config/plans';
import { BillingSubscription } from './billing-subscription.entity';
import { CheckoutRequestDto, CheckoutView, PlanView, PlansView, PortalRequestDto, PortalView } from './billing.dto';
import { PaymentProvider } from './payment-provider';
import { PlanPrices } from './plan-prices';

/** The plan catalogue, checkout and the customer portal. Webhooks: BillingWebhookService. */
@Injectable()
export class BillingService {
  constructor(
    private readonly config: AppConfig,
    private readonly provider: PaymentProvider,
    private readonly prices: PlanPrices,
    @InjectRepository(Organization) private readonly organizations: Repository<Organization>,
    @InjectRepository(BillingSubscription) private readonly subscriptions: Repository<BillingSubscription>,
  ) {}

  /** The four plans, cheapest first (docs/billing.md). */
  plans(): PlansView {
    return { plans: PLAN_IDS.map((id) => this.toView(PLANS[id])) };
  }

  /** A subscription checkout for the customer with this email (created when new). */
  async checkout(dto: CheckoutRequestDto): Promise<CheckoutView> {
    const customerId = (await this.linkedCustomer(dto.email)) ?? (await this.provider.findOrCreateCustomer(dto.email));
    const publicUrl = this.config.http.publicUrl;
    const session = await this.provider.createCheckoutSession({
      customerId,
      priceId: this.prices.priceFor(dto.plan, dto.interval),
      plan: dto.plan,
      // The provider replaces {CHECKOUT_SESSION_ID} with the session's id.
      successUrl: `${publicUrl}/billing/success?session_id={CHECKOUT_SESSION_ID}`,
      cancelUrl: `${publicUrl}/billing/cancel`,
    });
    return { checkoutUrl: session.url, sessionId: session.id };
  }

  /** A customer-portal session for a customer of the caller's organization (404 for any other). */
  async portal(admin: AdminPrincipal, dto: PortalRequestDto): Promise<PortalView> {
    if (!(await this.ownsCustomer(admin.orgId, dto.customerId))) {
      throw new AppError(ErrorCode.NotFound, `Customer ${dto.customerId} not found in this organization`);
    }
    return { portalUrl: await this.provider.createPortalSession(dto.customerId, this.config.http.publicUrl) };
  }

  private async ownsCustomer(orgId: string, customerId: string): Promise<boolean> {
    if (await this.organizations.exists({ where: { id: orgId, customerId } })) return true;
    return this.subscriptions.exists({ where: { orgId, customerId } });
  }

  private toView(plan: Plan): PlanView {
    const providerPrices = this.prices.of(plan.id);
    return {
      id: plan.id,
      name: plan.name,
      description: plan.description,
      limits: { ...plan.limits },
      pricing: plan.pricing === null ? null : { ...plan.pricing },
      ...(providerPrices === undefined ? {} : { providerPrices: { ...providerPrices } }),
      features: [...plan.features],
    };
  }

  /**
   * The customer of the organization billed at this email, compared as the webhook compares it
   * (in any case). The provider's search by email is case-sensitive: `Ada@x.com` made a second
   * customer beside `ada@x.com`'s, and its checkout then created a second organization.
   */
  private async linkedCustomer(email: string): Promise<string | null> {
    const rows: Array<{ customer_id: string }> = await this.organizations.query(
      'SELECT customer_id FROM organizations WHERE customer_id IS NOT NULL AND lower(billing_email) = lower($1) ORDER BY created_at, id LIMIT 1',
      [email],
    );
    return rows[0]?.customer_id ?? null;
  }
}

import { AppConfig } from '../../core/config/app-config';
import type { PlanId } from '../../core/config/plans';

/** Plans sold through checkout. */
export const PAID_PLANS = ['starter', 'professional'] as const;
export type PaidPlanId = (typeof PAID_PLANS)[number];

export const BILLING_INTERVALS = ['month', 'year'] as const;
export type BillingInterval = (typeof BILLING_INTERVALS)[number];

/**
 * The words of `GET /billing/plans` (`pricing.monthly`, `pricing.annual`), accepted by checkout
 * as the interval they name: a client reading the plans can send back what it read.
 */
export const INTERVAL_ALIASES: Readonly<Record<string, BillingInterval>> = { monthly: 'month', annual: 'year' };

export interface ProviderPrices {
  monthly: string;
  annual: string;
}

/** The provider price ids of the paid plans (PAYMENT_PRICE_*), and the way back from a price to its plan. */
export class PlanPrices {
  private readonly byPlan: Record<PaidPlanId, ProviderPrices>;
  private readonly planByPrice = new Map<string, PaidPlanId>();

  constructor(config: AppConfig) {
    const prices = config.payment.prices;
    this.byPlan = {
      starter: { monthly: prices.starterMonthly, annual: prices.starterAnnual },
      professional: { monthly: prices.professionalMonthly, annual: prices.professionalAnnual },
    };
    for (const plan of PAID_PLANS) {
      this.planByPrice.set(this.byPlan[plan].monthly, plan);
      this.planByPrice.set(this.byPlan[plan].annual, plan);
    }
  }

  /** Provider prices of a plan; undefined for free and enterprise. */
  of(plan: PlanId): ProviderPrices | undefined {
    return isPaidPlan(plan) ? this.byPlan[plan] : undefined;
  }

  /** The price id to charge for a plan and interval. */
  priceFor(plan: PaidPlanId, interval: BillingInterval): string {
    return interval === 'month' ? this.byPlan[plan].monthly : this.byPlan[plan].annual;
  }

  /** The plan a price id belongs to, or undefined for a price this gateway does not sell. */
  planOf(priceId: string): PaidPlanId | undefined {
    return this.planByPrice.get(priceId);
  }
}

function isPaidPlan(plan: string): plan is PaidPlanId {
  return (PAID_PLANS as readonly string[]).includes(plan);
}

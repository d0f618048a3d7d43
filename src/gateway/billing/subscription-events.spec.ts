import { AppConfig } from '../../core/config/app-config';
import { AppError } from '../../core/common/app-error';
import type { ProviderEvent } from './payment-provider';
import { PlanPrices } from './plan-prices';
import { readCheckoutCompleted, readSubscriptionChange } from './subscription-events';

function event(type: string, object: Record<string, unknown>): ProviderEvent {
  return { id: 'evt_1', type, created: 1_700_000_000, object };
}

function problem(read: () => unknown): string {
  try {
    read();
  } catch (error) {
    if (error instanceof AppError) return `${error.status} ${error.message}`;
    throw error;
  }
  return 'no error';
}

describe('readCheckoutCompleted', () => {
  const base = { id: 'cs_1', customer: 'cus_1', customer_email: 'a@example.com', subscription: 'sub_1', metadata: { plan: 'starter' } };

  it('reads the fields docs/billing.md names', () => {
    expect(readCheckoutCompleted(event('checkout.session.completed', base))).toEqual({
      sessionId: 'cs_1',
      customerId: 'cus_1',
      email: 'a@example.com',
      subscriptionId: 'sub_1',
      plan: 'starter',
    });
  });

  it('takes expanded ids and the customer_details email', () => {
    const expanded = { ...base, customer: { id: 'cus_2' }, subscription: { id: 'sub_2' }, customer_email: null, customer_details: { email: 'b@example.com' } };
    expect(readCheckoutCompleted(event('checkout.session.completed', expanded))).toMatchObject({ customerId: 'cus_2', subscriptionId: 'sub_2', email: 'b@example.com' });
  });

  it('reads a session without metadata.plan as none of the gateway\'s (null)', () => {
    expect(readCheckoutCompleted(event('checkout.session.completed', { ...base, metadata: {} }))).toBeNull();
    expect(readCheckoutCompleted(event('checkout.session.completed', { ...base, metadata: undefined }))).toBeNull();
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a plan not sold', { ...base, metadata: { plan: 'enterprise' } }, '400 data.object.metadata.plan must be one of: starter, professional'],
    ['an empty plan', { ...base, metadata: { plan: '' } }, '400 data.object.metadata.plan must be one of: starter, professional'],
    ['neither customer nor email', { ...base, customer: null, customer_email: null }, '400 data.object.customer or data.object.customer_email is required'],
    ['a customer that is not an id', { ...base, customer: 42 }, '400 data.object.customer must be an id string'],
    ['no session id', { ...base, id: undefined }, '400 data.object.id must be a non-empty string'],
  ])('refuses %s', (_name, object, expected) => {
    expect(problem(() => readCheckoutCompleted(event('checkout.session.completed', object)))).toBe(expected);
  });
});

describe('readSubscriptionChange', () => {
  it('reads id, customer, status and every item price', () => {
    const object = { id: 'sub_1', customer: 'cus_1', status: 'past_due', items: { data: [{ price: { id: 'price_a' } }, { price: { id: 'price_b' } }, { nothing: true }] } };
    expect(readSubscriptionChange(event('customer.subscription.updated', object))).toEqual({ subscriptionId: 'sub_1', customerId: 'cus_1', status: 'past_due', priceIds: ['price_a', 'price_b'] });
  });

  it('defaults the status of a deletion to canceled', () => {
    expect(readSubscriptionChange(event('customer.subscription.deleted', { id: 'sub_1', customer: 'cus_1' })).status).toBe('canceled');
  });

  it('refuses a subscription without a customer', () => {
    expect(problem(() => readSubscriptionChange(event('customer.subscription.updated', { id: 'sub_1' })))).toBe('400 data.object.customer is required');
  });
});

describe('PlanPrices', () => {
  const prices = new PlanPrices(
    AppConfig.fromEnv({ PAYMENT_PRICE_STARTER_MONTHLY: 'p_sm', PAYMENT_PRICE_STARTER_ANNUAL: 'p_sa', PAYMENT_PRICE_PROFESSIONAL_MONTHLY: 'p_pm', PAYMENT_PRICE_PROFESSIONAL_ANNUAL: 'p_pa' }),
  );

  it('maps plan and interval to a price and every price back to its plan', () => {
    expect([prices.priceFor('starter', 'month'), prices.priceFor('starter', 'year'), prices.priceFor('professional', 'month'), prices.priceFor('professional', 'year')]).toEqual(['p_sm', 'p_sa', 'p_pm', 'p_pa']);
    expect(['p_sm', 'p_sa', 'p_pm', 'p_pa', 'p_other'].map((id) => prices.planOf(id))).toEqual(['starter', 'starter', 'professional', 'professional', undefined]);
  });

  it('has provider prices for the paid plans only', () => {
    expect([prices.of('free'), prices.of('starter'), prices.of('enterprise')]).toEqual([undefined, { monthly: 'p_sm', annual: 'p_sa' }, undefined]);
  });
});

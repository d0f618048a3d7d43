import { AppError } from '../../core/common/app-error';
import type { ProviderEvent } from './payment-provider';
import { PAID_PLANS, PaidPlanId } from './plan-prices';

/** The event types the subscription table acts on (docs/billing.md "The webhook"). */
export enum BillingEventType {
  CheckoutCompleted = 'checkout.session.completed',
  SubscriptionUpdated = 'customer.subscription.updated',
  SubscriptionDeleted = 'customer.subscription.deleted',
}

/** The fields of `checkout.session.completed` billing reads. */
export interface CheckoutCompleted {
  sessionId: string;
  customerId: string | null;
  email: string | null;
  subscriptionId: string | null;
  plan: PaidPlanId;
}

/** The fields of `customer.subscription.updated` and `.deleted` billing reads. */
export interface SubscriptionChange {
  subscriptionId: string;
  customerId: string;
  status: string;
  /** Price ids of the subscription's items (updated events). */
  priceIds: string[];
}

/** Statuses in which a subscription still grants its plan. */
export const LIVE_STATUSES: ReadonlySet<string> = new Set(['active', 'trialing', 'past_due']);

/**
 * Reads a checkout.session.completed object; a missing or wrong field is a 400 naming it. Null
 * for a session without `metadata.plan`, which POST /billing/checkout always sets: one the
 * gateway did not start (a payment link, another product of the account) is not its business,
 * and a 400 would have the provider retry it for days and then disable the endpoint.
 */
export function readCheckoutCompleted(event: ProviderEvent): CheckoutCompleted | null {
  const object = event.object;
  const plan = ownRecord(object.metadata)?.plan;
  if (plan === undefined) return null;
  if (!(PAID_PLANS as readonly unknown[]).includes(plan)) {
    throw AppError.invalid(`data.object.metadata.plan must be one of: ${PAID_PLANS.join(', ')}`);
  }
  const details = ownRecord(object.customer_details);
  const email = optionalString(object, 'customer_email') ?? (typeof details?.email === 'string' && details.email !== '' ? details.email : null);
  const customerId = idOf(object.customer, 'data.object.customer');
  if (customerId === null && email === null) throw AppError.invalid('data.object.customer or data.object.customer_email is required');
  return {
    sessionId: requiredString(object, 'id'),
    customerId,
    email,
    subscriptionId: idOf(object.subscription, 'data.object.subscription'),
    plan: plan as PaidPlanId,
  };
}

/** Reads a customer.subscription.updated or .deleted object. */
export function readSubscriptionChange(event: ProviderEvent): SubscriptionChange {
  const object = event.object;
  const customerId = idOf(object.customer, 'data.object.customer');
  if (customerId === null) throw AppError.invalid('data.object.customer is required');
  return {
    subscriptionId: requiredString(object, 'id'),
    customerId,
    status: optionalString(object, 'status') ?? (event.type === BillingEventType.SubscriptionDeleted ? 'canceled' : 'active'),
    priceIds: priceIdsOf(object.items),
  };
}

function priceIdsOf(items: unknown): string[] {
  const data = ownRecord(items)?.data;
  if (!Array.isArray(data)) return [];
  return data.map((item) => ownRecord(ownRecord(item)?.price)?.id).filter((id): id is string => typeof id === 'string');
}

/** An id field that the provider sends as a string or, when expanded, as an object with an id. */
function idOf(value: unknown, field: string): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' && value !== '') return value;
  const id = ownRecord(value)?.id;
  if (typeof id === 'string' && id !== '') return id;
  throw AppError.invalid(`${field} must be an id string`);
}

function requiredString(object: Record<string, unknown>, field: string): string {
  const value = object[field];
  if (typeof value !== 'string' || value === '') throw AppError.invalid(`data.object.${field} must be a non-empty string`);
  return value;
}

function optionalString(object: Record<string, unknown>, field: string): string | null {
  const value = object[field];
  return typeof value === 'string' && value !== '' ? value : null;
}

function ownRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import Stripe from 'stripe';
import { AppConfig } from '../../core/config/app-config';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { LOGGER } from '../../core/logging/logging.module';

/** Seconds a webhook signature's timestamp may be away from now (five minutes). */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/** A verified webhook event, as the rest of billing reads it. */
export interface ProviderEvent {
  id: string;
  type: string;
  /** Unix seconds. */
  created: number;
  /** `data.object`: fields are read and checked by the handler of each type. */
  object: Record<string, unknown>;
}

export interface CheckoutRequest {
  customerId: string;
  priceId: string;
  plan: string;
  successUrl: string;
  cancelUrl: string;
}

/**
 * The one place that talks to the payment provider (Stripe, through its SDK). Provider failures
 * become AppErrors that carry no provider message or secret; the details go to the log.
 */
@Injectable()
export class PaymentProvider {
  private readonly stripe: Stripe | null;

  constructor(
    private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    const { secretKey, apiUrl } = config.payment;
    this.stripe = secretKey === undefined ? null : new Stripe(secretKey, { ...endpointOf(apiUrl), maxNetworkRetries: 1, timeout: 8_000, telemetry: false });
  }

  /** True when PAYMENT_SECRET_KEY is set. */
  get enabled(): boolean {
    return this.stripe !== null;
  }

  /** The id of the customer with this email, created when there is none. */
  async findOrCreateCustomer(email: string): Promise<string> {
    const stripe = this.client();
    return this.call('customers', async () => {
      const found = await stripe.customers.list({ email, limit: 1 });
      if (found.data.length > 0) return found.data[0].id;
      const created = await stripe.customers.create({ email });
      return created.id;
    });
  }

  /** The email of a customer, or null when it has none. */
  async customerEmail(customerId: string): Promise<string | null> {
    const stripe = this.client();
    return this.call('customers', async () => {
      const customer = await stripe.customers.retrieve(customerId);
      return customer.deleted ? null : (customer.email ?? null);
    });
  }

  /** A subscription checkout session for one price; its metadata carries the plan. */
  async createCheckoutSession(request: CheckoutRequest): Promise<{ id: string; url: string }> {
    const stripe = this.client();
    return this.call('checkout', async () => {
      const session = await stripe.checkout.sessions.create({
        mode: 'subscription',
        customer: request.customerId,
        line_items: [{ price: request.priceId, quantity: 1 }],
        success_url: request.successUrl,
        cancel_url: request.cancelUrl,
        metadata: { plan: request.plan },
        subscription_data: { metadata: { plan: request.plan } },
      });
      if (session.url === null) throw new Error('the checkout session has no url');
      return { id: session.id, url: session.url };
    });
  }

  /** A customer-portal session URL for a customer. */
  async createPortalSession(customerId: string, returnUrl: string): Promise<string> {
    const stripe = this.client();
    return this.call('portal', async () => {
      const session = await stripe.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl });
      return session.url;
    });
  }

  /**
   * Checks `Provider-Signature` over the raw body with PAYMENT_WEBHOOK_SECRET and parses the
   * event: a bad signature or a stale timestamp is invalid_signature, a malformed payload
   * invalid_request (both 400).
   */
  verifyEvent(rawBody: Buffer, signature: string | undefined): ProviderEvent {
    const secret = this.config.payment.webhookSecret;
    if (secret === undefined) throw new AppError(ErrorCode.BillingDisabled, 'Billing webhooks are not configured (PAYMENT_WEBHOOK_SECRET is unset)');
    if (signature === undefined || signature === '') throw new AppError(ErrorCode.InvalidSignature, 'Missing Provider-Signature header');
    let event: Stripe.Event;
    try {
      event = Stripe.webhooks.constructEvent(rawBody, signature, secret, WEBHOOK_TOLERANCE_SECONDS);
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError) throw new AppError(ErrorCode.InvalidSignature, 'Invalid Provider-Signature');
      throw AppError.invalid('Malformed event payload: not a JSON object');
    }
    return toProviderEvent(event);
  }

  private client(): Stripe {
    if (this.stripe === null) throw new AppError(ErrorCode.BillingDisabled, 'Billing is not configured (PAYMENT_SECRET_KEY is unset)');
    return this.stripe;
  }

  private async call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw this.translate(operation, error);
    }
  }

  private translate(operation: string, error: unknown): AppError {
    if (!(error instanceof Stripe.errors.StripeError)) {
      this.logger.error({ operation, err: error }, 'payment provider call failed');
      return new AppError(ErrorCode.PaymentProviderError, 'The payment provider request failed');
    }
    this.logger.error(
      { operation, providerType: error.type, providerCode: error.code, providerParam: error.param, providerStatus: error.statusCode, providerRequestId: error.requestId },
      'payment provider call failed',
    );
    if (error.code === 'resource_missing' && missingIsCustomer(operation, error.param)) {
      return new AppError(ErrorCode.NotFound, 'The payment provider does not know this customer');
    }
    return new AppError(ErrorCode.PaymentProviderError, 'The payment provider request failed', { providerError: error.type });
  }
}

/**
 * Whether a `resource_missing` answer is about the customer. A checkout also names a price, and
 * a price the provider does not know (a PAYMENT_PRICE_* left at its placeholder) is the
 * gateway's misconfiguration, not a customer the caller could correct.
 */
function missingIsCustomer(operation: string, param: string | undefined): boolean {
  return operation !== 'checkout' || param === 'customer';
}

/** SDK host/port/protocol of PAYMENT_API_URL (a local fake in tests); the SDK's default otherwise. */
function endpointOf(apiUrl: string | undefined): { host?: string; port?: number; protocol?: 'http' | 'https' } {
  if (apiUrl === undefined) return {};
  const url = new URL(apiUrl);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { host: url.hostname, port: url.port === '' ? (protocol === 'http' ? 80 : 443) : Number(url.port), protocol };
}

function toProviderEvent(event: Stripe.Event): ProviderEvent {
  const raw = event as unknown as { id?: unknown; type?: unknown; created?: unknown; data?: { object?: unknown } };
  const object = raw.data?.object;
  const valid = typeof raw.id === 'string' && raw.id !== '' && typeof raw.type === 'string' && typeof raw.created === 'number' && isRecord(object);
  if (!valid) throw AppError.invalid('Malformed event payload: id, type, created and data.object are required');
  return { id: raw.id as string, type: raw.type as string, created: raw.created as number, object: object as Record<string, unknown> };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

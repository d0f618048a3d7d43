import { Body, Controller, Get, Headers, HttpCode, Post, type RawBodyRequest, Req, UseGuards } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiHeader,
  ApiInternalServerErrorResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import { SkipThrottle } from '@nestjs/throttler';
import type { Request } from 'express';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminBearerAuth, CurrentAdmin, Public } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { BILLING_THROTTLER, BillingThrottlerGuard } from './billing-throttler.guard';
import { BillingWebhookService } from './billing-webhook.service';
import { CheckoutRequestDto, CheckoutView, PlansView, PortalRequestDto, PortalView, RateLimitedBody, WebhookReceivedView } from './billing.dto';
import { BillingService } from './billing.service';

/** Header carrying the webhook signature (`t=<ts>,v1=<sig>`). */
export const PROVIDER_SIGNATURE_HEADER = 'provider-signature';

/** Documents the shared billing rate limit on a route. */
const ApiRateLimited = () =>
  ApiTooManyRequestsResponse({ description: 'RATE_LIMIT_RPM per client address exceeded (all billing endpoints but the webhook share it)', type: RateLimitedBody });

@ApiTags('billing')
@UseGuards(BillingThrottlerGuard)
@ApiInternalServerErrorResponse({ description: 'Payment provider error or server failure; no provider detail or secret', type: ErrorBody })
@Controller('billing')
export class BillingController {
  constructor(
    private readonly billing: BillingService,
    private readonly webhooks: BillingWebhookService,
  ) {}

  @Get('plans')
  @ApiRateLimited()
  @Public()
  @ApiOperation({ summary: 'The four plans (free, starter, professional, enterprise) with limits, prices and features' })
  @ApiOkResponse({ type: PlansView })
  plans(): PlansView {
    return this.billing.plans();
  }

  @Post('checkout')
  @ApiRateLimited()
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'Starts a subscription checkout; redirect the user to checkoutUrl' })
  @ApiOkResponse({ type: CheckoutView })
  @ApiBadRequestResponse({ description: 'Missing or invalid email, plan or interval', type: ErrorBody })
  @ApiServiceUnavailableResponse({ description: '`billing_disabled`: PAYMENT_SECRET_KEY is not set', type: ErrorBody })
  checkout(@Body() dto: CheckoutRequestDto): Promise<CheckoutView> {
    return this.billing.checkout(dto);
  }

  @Post('portal')
  @ApiRateLimited()
  @AdminBearerAuth()
  @HttpCode(200)
  @ApiOperation({ summary: 'A customer-portal session (payment method, address, invoices, plan changes, cancellation)' })
  @ApiOkResponse({ type: PortalView })
  @ApiBadRequestResponse({ description: 'Missing or invalid customerId', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'The customer is not one of the calling organization', type: ErrorBody })
  @ApiServiceUnavailableResponse({ description: '`billing_disabled`: PAYMENT_SECRET_KEY is not set', type: ErrorBody })
  portal(@CurrentAdmin() admin: AdminPrincipal, @Body() dto: PortalRequestDto): Promise<PortalView> {
    return this.billing.portal(admin, dto);
  }

  /** Authenticated by the signature, which the service verifies over the raw body. */
  @Post('webhook')
  @Public()
  @SkipThrottle({ [BILLING_THROTTLER]: true })
  @HttpCode(200)
  @ApiOperation({ summary: 'Receives payment-provider events (checkout.session.completed, customer.subscription.updated/deleted)' })
  @ApiHeader({ name: 'Provider-Signature', required: true, description: '`t=<unix seconds>,v1=<hex HMAC-SHA256>`, signed with PAYMENT_WEBHOOK_SECRET; five-minute tolerance' })
  @ApiBody({ description: 'A payment-provider event object', schema: { type: 'object', properties: { id: { type: 'string' }, type: { type: 'string' }, created: { type: 'number' }, data: { type: 'object' } } } })
  @ApiOkResponse({
    type: WebhookReceivedView,
    description: 'Processed; or acknowledged with nothing changed: a replay, an event type not handled, a price not sold, a checkout without metadata.plan',
  })
  @ApiBadRequestResponse({ description: 'Invalid signature or malformed event', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'The subscription\'s customer is not linked to any organization yet (the provider retries)', type: ErrorBody })
  @ApiServiceUnavailableResponse({ description: '`billing_disabled`: PAYMENT_WEBHOOK_SECRET is not set', type: ErrorBody })
  async webhook(@Req() request: RawBodyRequest<Request>, @Headers(PROVIDER_SIGNATURE_HEADER) signature: string | undefined): Promise<WebhookReceivedView> {
    await this.webhooks.receive(request.rawBody, signature);
    return { received: true };
  }
}

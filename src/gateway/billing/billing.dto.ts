import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsEmail, IsIn, IsNotEmpty, IsString, Matches, MaxLength } from 'class-validator';
import { ErrorBody } from '../../core/common/error-body.dto';
import { PlanLimitsView } from '../organizations/organizations.dto';
import { PLAN_IDS } from '../../core/config/plans';
import { BILLING_INTERVALS, INTERVAL_ALIASES, PAID_PLANS } from './plan-prices';

export class CheckoutRequestDto {
  @ApiProperty({ example: 'ada@example.com', maxLength: 254 })
  @IsEmail({}, { message: 'email must be a valid email address' })
  @MaxLength(254)
  email: string;

  @ApiProperty({ enum: PAID_PLANS })
  @IsIn(PAID_PLANS, { message: `plan must be one of: ${PAID_PLANS.join(', ')}` })
  plan: (typeof PAID_PLANS)[number];

  @ApiProperty({ enum: BILLING_INTERVALS, description: '`month` or `year`; `monthly` and `annual` (the words of GET /billing/plans) are read as them' })
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' && Object.hasOwn(INTERVAL_ALIASES, value) ? INTERVAL_ALIASES[value] : value))
  @IsIn(BILLING_INTERVALS, { message: `interval must be one of: ${BILLING_INTERVALS.join(', ')} (or monthly, annual)` })
  interval: (typeof BILLING_INTERVALS)[number];
}

export class CheckoutView {
  @ApiProperty({ description: 'Where to send the user to pay', example: 'https://checkout.stripe.com/c/pay/cs_test_a1' })
  checkoutUrl: string;

  @ApiProperty({ example: 'cs_test_a1' })
  sessionId: string;
}

export class PortalRequestDto {
  @ApiProperty({ description: 'Payment-provider customer id of the calling organization', example: 'cus_Q1w2e3' })
  @IsString({ message: 'customerId must be a string' })
  @IsNotEmpty({ message: 'customerId must not be empty' })
  @MaxLength(255)
  @Matches(/^[A-Za-z0-9_]+$/, { message: 'customerId must be a payment-provider customer id (letters, digits, _)' })
  customerId: string;
}

export class PortalView {
  @ApiProperty({ example: 'https://billing.stripe.com/p/session/test_a1' })
  portalUrl: string;
}

export class PlanPricingView {
  @ApiProperty({ description: 'Monthly price in minor units (cents)', example: 2900 }) monthly: number;
  @ApiProperty({ description: 'Annual price in minor units (cents)', example: 27800 }) annual: number;
  @ApiProperty({ description: 'Lowercase ISO currency code', example: 'usd' }) currency: string;
}

export class ProviderPricesView {
  @ApiProperty({ example: 'price_1Starter' }) monthly: string;
  @ApiProperty({ example: 'price_1StarterYear' }) annual: string;
}

export class PlanView {
  @ApiProperty({ enum: PLAN_IDS }) id: string;
  @ApiProperty() name: string;
  @ApiProperty() description: string;
  @ApiProperty({ type: PlanLimitsView }) limits: PlanLimitsView;
  @ApiProperty({ type: PlanPricingView, nullable: true, description: 'Null for enterprise' }) pricing: PlanPricingView | null;
  @ApiPropertyOptional({ type: ProviderPricesView, description: 'Present on starter and professional only' }) providerPrices?: ProviderPricesView;
  @ApiProperty({ type: [String] }) features: string[];
}

export class PlansView {
  @ApiProperty({ type: [PlanView], description: 'free, starter, professional, enterprise, in this order' })
  plans: PlanView[];
}

export class WebhookReceivedView {
  @ApiProperty({ example: true }) received: true;
}

export class RateLimitedBody extends ErrorBody {
  @ApiProperty({ example: 12, description: 'Seconds until a request is accepted again' }) retry_after: number;
  @ApiProperty({ example: '600/1m per client address' }) limit: string;
}

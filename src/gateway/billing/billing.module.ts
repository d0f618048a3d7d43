import { Module } from '@nestjs/common';
import { ThrottlerModule, ThrottlerStorageService } from '@nestjs/throttler';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { AppConfig } from '../../core/config/app-config';
import { Organization } from '../organizations/organization.entity';
import { OrganizationsModule } from '../organizations/organizations.module';
import { BillingEvent } from './billing-event.entity';
import { BillingMailer, createBillingMailer } from './billing-mailer';
import { BillingSubscription } from './billing-subscription.entity';
import { BILLING_THROTTLER, BillingThrottlerGuard } from './billing-throttler.guard';
import { BillingWebhookService } from './billing-webhook.service';
import { ConfirmationSender } from './confirmation-sender';
import { BillingController } from './billing.controller';
import { BillingService } from './billing.service';
import { PaymentProvider } from './payment-provider';
import { PlanPrices } from './plan-prices';
import { RedisThrottlerStorage } from './redis-throttler-storage';

const RATE_WINDOW_MS = 60_000;

/** Plans, checkout, the customer portal and the payment provider's webhooks. */
@Module({
  imports: [
    TypeOrmModule.forFeature([Organization, BillingSubscription, BillingEvent]),
    OrganizationsModule,
    AuditModule,
    ThrottlerModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        throttlers: [{ name: BILLING_THROTTLER, ttl: RATE_WINDOW_MS, limit: config.http.rateLimitRpm }],
        storage: config.redis.url === undefined ? new ThrottlerStorageService() : new RedisThrottlerStorage(config.redis.url),
      }),
    }),
  ],
  controllers: [BillingController],
  providers: [
    BillingService,
    BillingWebhookService,
    ConfirmationSender,
    PaymentProvider,
    BillingThrottlerGuard,
    { provide: PlanPrices, inject: [AppConfig], useFactory: (config: AppConfig) => new PlanPrices(config) },
    { provide: BillingMailer, inject: [AppConfig], useFactory: createBillingMailer },
  ],
})
export class BillingModule {}

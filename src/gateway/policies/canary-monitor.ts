import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Logger } from 'pino';
import { AppConfig } from '../../core/config/app-config';
import { LOGGER } from '../../core/logging/logging.module';
import { PolicyCanariesService } from './policy-canaries.service';

/**
 * Compares the running canary rollouts every CANARY_CHECK_INTERVAL and takes the step each calls
 * for (docs/policies.md "Canary rollouts"). Every instance compares; a step is taken once, by
 * whichever instance comes first. One comparison at a time: a slow one is never overlapped.
 */
@Injectable()
export class CanaryMonitor implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | undefined;
  private comparing: Promise<void> | undefined;

  constructor(
    private readonly config: AppConfig,
    private readonly canaries: PolicyCanariesService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.compare(), this.config.policies.canaryCheckMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.comparing;
  }

  private compare(): void {
    if (this.comparing !== undefined) return;
    this.comparing = this.canaries
      .judge()
      .catch((error: unknown) => this.logger.error({ err: error }, 'canary rollouts could not be compared; compared again at the next interval'))
      .finally(() => (this.comparing = undefined));
  }
}

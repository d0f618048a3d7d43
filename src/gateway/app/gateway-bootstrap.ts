import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { Logger } from 'pino';
import { AppConfig } from '../../core/config/app-config';
import { TokenIssuer } from '../signing-keys/token-issuer';
import { LOGGER } from '../../core/logging/logging.module';
import { BOOTSTRAP_ORG_ID, OrganizationsService } from '../organizations/organizations.service';

/** Start duties: the deployment's token issuer; at the first start, the bootstrap organization and its admin token. */
@Injectable()
export class GatewayBootstrap implements OnApplicationBootstrap {
  /** The admin token generated at this start, if one was. */
  generatedAdminToken: string | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly organizations: OrganizationsService,
    private readonly issuer: TokenIssuer,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.issuer.record();
    this.generatedAdminToken = await this.organizations.bootstrap(this.config.auth.adminToken, this.config.auth.defaultPlan);
    if (this.config.auth.adminToken) this.logger.info({ orgId: BOOTSTRAP_ORG_ID }, 'admin token taken from ADMIN_TOKEN');
    else if (this.generatedAdminToken === null) {
      this.logger.info({ orgId: BOOTSTRAP_ORG_ID }, 'admin token was generated and printed at the first start; `ags orgs rotate-token org_default` issues a new one');
    }
  }
}

import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../core/config/app-config';
import { TokenIssuer } from '../gateway/signing-keys/token-issuer';
import { OrganizationsService } from '../gateway/organizations/organizations.service';

/**
 * The CLI may run before the gateway ever has: org_default must exist for its defaults. Its
 * tokens carry the issuer the gateway recorded (TokenIssuer).
 */
@Injectable()
export class CliBootstrap implements OnApplicationBootstrap {
  constructor(
    private readonly config: AppConfig,
    private readonly organizations: OrganizationsService,
    private readonly issuer: TokenIssuer,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.issuer.adoptRecorded();
    await this.organizations.ensureBootstrapOrganization(this.config.auth.defaultPlan);
  }
}

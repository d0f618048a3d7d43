import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { OrganizationsService } from '../organizations/organizations.service';

/** The CLI may run before the gateway ever has: org_default must exist for its defaults. */
@Injectable()
export class CliBootstrap implements OnApplicationBootstrap {
  constructor(
    private readonly config: AppConfig,
    private readonly organizations: OrganizationsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.organizations.ensureBootstrapOrganization(this.config.auth.defaultPlan);
  }
}

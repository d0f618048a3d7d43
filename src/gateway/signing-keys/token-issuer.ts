import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../core/config/app-config';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';

const ISSUER_SETTING = 'token_issuer';

/**
 * The `iss` agent tokens are issued with. The gateway's is its PUBLIC_URL, which it records in
 * the database at every start; the CLI, sharing that database, issues with the recorded one, so
 * `ags agents token` run without the gateway's PUBLIC_URL (or PORT) still makes tokens the gateway
 * accepts, and refuses to make any when its own PUBLIC_URL names another issuer.
 */
@Injectable()
export class TokenIssuer {
  private issuer: string;

  constructor(
    private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {
    this.issuer = config.http.publicUrl;
  }

  /** The issuer new agent tokens carry. */
  get url(): string {
    return this.issuer;
  }

  /** The gateway's: records its PUBLIC_URL as the deployment's issuer. */
  async record(): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO deployment_settings (name, value, updated_at) VALUES ($1, $2, now())
         ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
      [ISSUER_SETTING, this.config.http.publicUrl],
    );
  }

  /** The CLI's: adopts the issuer the gateway recorded, or refuses when PUBLIC_URL is set to another. */
  async adoptRecorded(): Promise<void> {
    const rows: Array<{ value: string }> = await this.dataSource.query('SELECT value FROM deployment_settings WHERE name = $1', [ISSUER_SETTING]);
    const recorded = rows[0]?.value;
    if (recorded === undefined || recorded === this.issuer) return;
    if (this.config.http.publicUrlSet) {
      throw new AppError(
        ErrorCode.InvalidRequest,
        `PUBLIC_URL=${this.issuer} here, but the gateway on this database issues and accepts tokens of ${recorded} (its PUBLIC_URL): set PUBLIC_URL=${recorded}, or leave it unset`,
      );
    }
    this.issuer = recorded;
  }
}

import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../core/config/app-config';

const SECRET_SETTING = 'approval_link_secret';

/** What a link does. */
export type LinkVerb = 'approve' | 'reject';

/**
 * The approve and reject links of an approval's notification (docs/approvals.md): each carries
 * an HMAC of the approval id, the verb and the expiry under a secret every instance shares (kept
 * in deployment_settings), so only whoever holds the link can act; the approval's state makes it
 * once, and the expiry before it lapses.
 */
@Injectable()
export class ApprovalLinks {
  private secret: Promise<Buffer> | undefined;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  /** The link's URL (a page that asks to confirm; links are not acted on by a GET, which chat previews send). */
  async url(approvalId: string, verb: LinkVerb, expiresAt: string): Promise<string> {
    const token = await this.token(approvalId, verb, Date.parse(expiresAt));
    return `${this.config.http.publicUrl}/approvals/${approvalId}/${verb}?expires=${Date.parse(expiresAt)}&token=${token}`;
  }

  /** True when the token was made for this approval, verb and expiry, and the expiry is ahead. */
  async verify(approvalId: string, verb: LinkVerb, expiresMs: number, token: string): Promise<boolean> {
    if (!Number.isSafeInteger(expiresMs) || expiresMs <= Date.now()) return false;
    const expected = Buffer.from(await this.token(approvalId, verb, expiresMs));
    const given = Buffer.from(token);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private async token(approvalId: string, verb: LinkVerb, expiresMs: number): Promise<string> {
    return createHmac('sha256', await this.key()).update(`${approvalId}\u0000${verb}\u0000${expiresMs}`).digest('base64url');
  }

  private key(): Promise<Buffer> {
    this.secret ??= this.loadSecret().catch((error: unknown) => {
      this.secret = undefined;
      throw error;
    });
    return this.secret;
  }

  /** The shared secret, made by the first instance that needs it. */
  private async loadSecret(): Promise<Buffer> {
    await this.dataSource.query(`INSERT INTO deployment_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, [SECRET_SETTING, randomBytes(32).toString('base64')]);
    const rows: Array<{ value: string }> = await this.dataSource.query('SELECT value FROM deployment_settings WHERE name = $1', [SECRET_SETTING]);
    return Buffer.from(rows[0].value, 'base64');
  }
}

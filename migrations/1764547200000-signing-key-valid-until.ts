import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Until when a signing key must stay published: a token issued with a lifetime longer than
 * AGENT_TOKEN_TTL (`ags agents token --ttl 7d`) outlives the window its key's last use covers,
 * and once the key is retired every verifier would refuse it before its expiry.
 */
export class SigningKeyValidUntil1764547200000 implements MigrationInterface {
  name = 'SigningKeyValidUntil1764547200000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE signing_keys ADD COLUMN valid_until timestamptz');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE signing_keys DROP COLUMN valid_until');
  }
}

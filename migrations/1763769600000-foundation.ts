import { MigrationInterface, QueryRunner } from 'typeorm';

/** Organizations, admin tokens, agents, signing keys and monthly usage counters. */
export class Foundation1763769600000 implements MigrationInterface {
  name = 'Foundation1763769600000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE organizations (
        id text PRIMARY KEY,
        name text NOT NULL,
        plan text NOT NULL,
        billing_email text,
        customer_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await runner.query(`CREATE UNIQUE INDEX organizations_customer_id ON organizations (customer_id) WHERE customer_id IS NOT NULL`);
    await runner.query(`CREATE INDEX organizations_billing_email ON organizations (lower(billing_email))`);
    await runner.query(`
      CREATE TABLE admin_tokens (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        token_hash text NOT NULL UNIQUE,
        kind text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await runner.query(`CREATE INDEX admin_tokens_org ON admin_tokens (org_id)`);
    await runner.query(`
      CREATE TABLE agents (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        name text NOT NULL,
        trust_tier text NOT NULL,
        tags text[] NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await runner.query(`CREATE INDEX agents_org_created ON agents (org_id, created_at)`);
    await runner.query(`
      CREATE TABLE signing_keys (
        kid text PRIMARY KEY,
        public_jwk jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz NOT NULL DEFAULT now()
      )`);
    await runner.query(`
      CREATE TABLE usage_counters (
        org_id text NOT NULL REFERENCES organizations (id),
        period text NOT NULL,
        policy_checks bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (org_id, period)
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of ['usage_counters', 'signing_keys', 'agents', 'admin_tokens', 'organizations']) {
      await runner.query(`DROP TABLE ${table}`);
    }
  }
}

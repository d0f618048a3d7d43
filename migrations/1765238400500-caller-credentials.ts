import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One table for the secrets callers present, with their kind: admin tokens, API keys and sidecar
 * tokens were three tables of the same hashed credential. The rows move with their ids, hashes
 * and times, so every secret handed out keeps working; down() moves them back.
 */
export class CallerCredentials1765238400500 implements MigrationInterface {
  name = 'CallerCredentials1765238400500';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE caller_credentials (
        id text PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('api_key', 'sidecar_token', 'admin_token')),
        org_id text NOT NULL REFERENCES organizations (id),
        name text,
        secret_hash text NOT NULL,
        secret_prefix text,
        bootstrap boolean NOT NULL DEFAULT false,
        sidecar_keys text,
        sidecar_id text,
        bound_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz,
        CHECK (kind = 'admin_token' OR (name IS NOT NULL AND secret_prefix IS NOT NULL)),
        CHECK (kind = 'admin_token' OR NOT bootstrap),
        CHECK (kind = 'sidecar_token' OR (sidecar_keys IS NULL AND sidecar_id IS NULL AND bound_at IS NULL))
      )`);
    // By kind: each kind's secrets were unique in their own table, and a lookup names its kind.
    await runner.query('CREATE UNIQUE INDEX caller_credentials_hash ON caller_credentials (kind, secret_hash)');
    await runner.query('CREATE INDEX caller_credentials_org ON caller_credentials (org_id, kind, created_at)');
    await runner.query(`
      INSERT INTO caller_credentials (id, kind, org_id, secret_hash, bootstrap, created_at, revoked_at)
      SELECT id, 'admin_token', org_id, token_hash, kind = 'bootstrap', created_at, revoked_at FROM admin_tokens`);
    await runner.query(`
      INSERT INTO caller_credentials (id, kind, org_id, name, secret_hash, secret_prefix, created_at, revoked_at)
      SELECT id, 'api_key', org_id, name, key_hash, key_prefix, created_at, revoked_at FROM api_keys`);
    await runner.query(`
      INSERT INTO caller_credentials (id, kind, org_id, name, secret_hash, secret_prefix, sidecar_keys, sidecar_id, bound_at, created_at, revoked_at)
      SELECT id, 'sidecar_token', org_id, name, token_hash, token_prefix, sidecar_keys, sidecar_id, bound_at, created_at, revoked_at FROM sidecar_tokens`);
    await runner.query('DROP TABLE admin_tokens, api_keys, sidecar_tokens');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE admin_tokens (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        token_hash text NOT NULL UNIQUE,
        kind text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await runner.query('CREATE INDEX admin_tokens_org ON admin_tokens (org_id)');
    await runner.query(`
      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        name text NOT NULL,
        key_hash text NOT NULL UNIQUE,
        key_prefix text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await runner.query('CREATE INDEX api_keys_org ON api_keys (org_id, created_at)');
    await runner.query(`
      CREATE TABLE sidecar_tokens (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        name text NOT NULL,
        token_hash text NOT NULL UNIQUE,
        token_prefix text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz,
        sidecar_keys text,
        sidecar_id text,
        bound_at timestamptz
      )`);
    await runner.query('CREATE INDEX sidecar_tokens_org ON sidecar_tokens (org_id, created_at)');
    await runner.query(`
      INSERT INTO admin_tokens (id, org_id, token_hash, kind, created_at, revoked_at)
      SELECT id, org_id, secret_hash, CASE WHEN bootstrap THEN 'bootstrap' ELSE 'issued' END, created_at, revoked_at FROM caller_credentials WHERE kind = 'admin_token'`);
    await runner.query(`
      INSERT INTO api_keys (id, org_id, name, key_hash, key_prefix, created_at, revoked_at)
      SELECT id, org_id, name, secret_hash, secret_prefix, created_at, revoked_at FROM caller_credentials WHERE kind = 'api_key'`);
    await runner.query(`
      INSERT INTO sidecar_tokens (id, org_id, name, token_hash, token_prefix, created_at, revoked_at, sidecar_keys, sidecar_id, bound_at)
      SELECT id, org_id, name, secret_hash, secret_prefix, created_at, revoked_at, sidecar_keys, sidecar_id, bound_at FROM caller_credentials WHERE kind = 'sidecar_token'`);
    await runner.query('DROP TABLE caller_credentials');
  }
}

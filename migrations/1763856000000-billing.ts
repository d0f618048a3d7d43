import { MigrationInterface, QueryRunner } from 'typeorm';

/** Payment-provider subscriptions of organizations, and the webhook events already processed. */
export class Billing1763856000000 implements MigrationInterface {
  name = 'Billing1763856000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE billing_subscriptions (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        customer_id text NOT NULL,
        plan text NOT NULL,
        status text NOT NULL,
        price_id text,
        last_event_created bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await runner.query(`CREATE INDEX billing_subscriptions_org ON billing_subscriptions (org_id)`);
    await runner.query(`CREATE INDEX billing_subscriptions_customer ON billing_subscriptions (customer_id)`);
    await runner.query(`
      CREATE TABLE billing_events (
        id text PRIMARY KEY,
        type text NOT NULL,
        org_id text,
        outcome text NOT NULL,
        processed_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE billing_events');
    await runner.query('DROP TABLE billing_subscriptions');
  }
}

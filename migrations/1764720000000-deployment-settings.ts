import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Facts of the deployment that every process on its database must agree on, set by the gateway
 * at start: the issuer (`iss`) of agent tokens, which the CLI reads so that the tokens it issues
 * are the ones the gateway accepts.
 */
export class DeploymentSettings1764720000000 implements MigrationInterface {
  name = 'DeploymentSettings1764720000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE deployment_settings (
        name text PRIMARY KEY,
        value text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE deployment_settings');
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An approval is bound to the whole decision input (docs/approvals.md): beside the agent, action,
 * method and path, the action derived from the request, its plugin and function, and the
 * `require_approval` rules that held it. Approvals opened before keep empty values: their
 * fingerprint no longer matches any request, so they cannot be spent.
 */
export class ApprovalBinding1764979200041 implements MigrationInterface {
  name = 'ApprovalBinding1764979200041';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE approvals
        ADD COLUMN derived_action text,
        ADD COLUMN plugin text NOT NULL DEFAULT '',
        ADD COLUMN function text NOT NULL DEFAULT '',
        ADD COLUMN holds jsonb NOT NULL DEFAULT '[]'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE approvals DROP COLUMN derived_action, DROP COLUMN plugin, DROP COLUMN function, DROP COLUMN holds');
  }
}

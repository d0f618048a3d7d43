import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Approvals are listed a page at a time in a stable order (created_at, id; docs/approvals.md
 * "Listing and limits"), by organization or by agent, and an agent's pending approvals are
 * counted against its cap as each is opened: one index for each way in.
 */
export class ApprovalPaging1765152000041 implements MigrationInterface {
  name = 'ApprovalPaging1765152000041';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('CREATE INDEX approvals_org_page ON approvals (org_id, created_at DESC, id DESC)');
    await runner.query('CREATE INDEX approvals_agent_page ON approvals (org_id, agent_id, created_at DESC, id DESC)');
    await runner.query(`CREATE INDEX approvals_agent_pending ON approvals (org_id, agent_id, expires_at) WHERE status = 'pending'`);
    await runner.query('DROP INDEX approvals_org_created');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('CREATE INDEX approvals_org_created ON approvals (org_id, created_at DESC)');
    await runner.query('DROP INDEX approvals_agent_pending');
    await runner.query('DROP INDEX approvals_agent_page');
    await runner.query('DROP INDEX approvals_org_page');
  }
}

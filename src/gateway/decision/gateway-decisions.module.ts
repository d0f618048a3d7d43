import { Module } from '@nestjs/common';
import { AgentDirectory } from '../agents/agent-directory';
import { AgentsModule } from '../agents/agents.module';
import { ApprovalsModule } from '../approvals/approvals.module';
import { StoredApprovals } from '../approvals/stored-approvals';
import { APPROVAL_DESK } from '../../core/decision/approval-ports';
import { AuditModule } from '../audit/audit.module';
import { AuditWriter } from '../audit/audit-writer';
import { AppConfig } from '../../core/config/app-config';
import { KeysModule } from '../signing-keys/keys.module';
import { KeyRing } from '../signing-keys/key-ring';
import { OrganizationsModule } from '../organizations/organizations.module';
import { UsageMeter } from '../organizations/usage-meter';
import { PoliciesModule } from '../policies/policies.module';
import { PolicyRegistry } from '../policies/policy-registry';
import { DecisionCoreModule } from '../../core/decision/decision-core.module';
import {
  AGENT_SOURCE,
  DECISION_LOG,
  DECISION_SETTINGS,
  DecisionSettings,
  POLICY_SOURCE,
  BUDGET_LEDGER,
  RATE_LIMITER,
  SESSION_MEMORY,
  USAGE_GATE,
  VERIFICATION_KEYS,
} from '../../core/decision/decision-sources';
import { GatewayRateLimiter } from './gateway-rate-limiter';
import { GatewayBudgetLedger } from './gateway-budget-ledger';
import { GatewaySessionMemory } from './gateway-session-memory';
import { PolicySimulationController } from '../policies/policy-simulation.controller';
import { PolicySimulator } from '../policies/policy-simulator';

/**
 * Deciding on the gateway: the decision core bound to its PostgreSQL-backed sources (policy
 * registry, agent directory, key ring, usage meter, audit writer, approvals), and simulation and backtests
 * on top of it.
 */
@Module({
  imports: [
    DecisionCoreModule.register({
      imports: [PoliciesModule, AgentsModule, KeysModule, OrganizationsModule, AuditModule, ApprovalsModule],
      sources: [
        { provide: POLICY_SOURCE, useExisting: PolicyRegistry },
        { provide: AGENT_SOURCE, useExisting: AgentDirectory },
        { provide: VERIFICATION_KEYS, useExisting: KeyRing },
        { provide: USAGE_GATE, useExisting: UsageMeter },
        { provide: DECISION_LOG, useExisting: AuditWriter },
        { provide: APPROVAL_DESK, useExisting: StoredApprovals },
        { provide: RATE_LIMITER, useClass: GatewayRateLimiter },
        GatewayBudgetLedger,
        { provide: BUDGET_LEDGER, useExisting: GatewayBudgetLedger },
        GatewaySessionMemory,
        { provide: SESSION_MEMORY, useExisting: GatewaySessionMemory },
        {
          provide: DECISION_SETTINGS,
          inject: [AppConfig],
          useFactory: (config: AppConfig): DecisionSettings => ({ mode: config.mode, tokenIssuer: config.http.publicUrl }),
        },
      ],
    }),
    PoliciesModule,
    AgentsModule,
  ],
  controllers: [PolicySimulationController],
  providers: [PolicySimulator],
  exports: [DecisionCoreModule],
})
export class GatewayDecisionsModule {}

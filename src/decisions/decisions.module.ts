import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { PoliciesModule } from '../policies/policies.module';
import { DecisionService } from './decision.service';
import { PolicySimulationController } from './policy-simulation.controller';
import { PolicySimulator } from './policy-simulator';

/** Deciding: the one decision service, and simulation and backtests on top of it. */
@Module({
  imports: [PoliciesModule, AgentsModule],
  controllers: [PolicySimulationController],
  providers: [DecisionService, PolicySimulator],
  exports: [DecisionService],
})
export class DecisionsModule {}

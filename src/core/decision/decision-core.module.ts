import { DynamicModule, InjectionToken, Module, ModuleMetadata, Provider } from '@nestjs/common';
import { AgentAuthenticator } from './agent-authenticator';
import { AgentTokenVerifier } from './agent-token-verifier';
import { DecisionEvents } from './decision-events';
import { DecisionMemory } from './decision-memory';
import { DecisionService } from './decision.service';
import { RecentDecisions } from './recent-decisions';
import { RequestFailures } from './request-failures';

function tokenOf(provider: Provider): InjectionToken {
  return typeof provider === 'function' ? provider : provider.provide;
}

const CORE = [DecisionService, DecisionMemory, DecisionEvents, RecentDecisions, RequestFailures, AgentTokenVerifier, AgentAuthenticator];

/**
 * The governed decision and agent-token verification, on whatever sources the host binds to
 * the tokens of decision-sources.ts: PostgreSQL on the gateway (GatewayDecisionsModule), a signed
 * bundle on the edge sidecar, in-memory sources in tests. Nothing here imports TypeORM.
 */
@Module({})
export class DecisionCoreModule {
  static register(options: { imports?: ModuleMetadata['imports']; sources: Provider[] }): DynamicModule {
    return {
      module: DecisionCoreModule,
      imports: options.imports ?? [],
      providers: [...options.sources, ...CORE],
      // The sources too: transports read them (the PDP looks agents up by id).
      exports: [...CORE, ...options.sources.map(tokenOf)],
    };
  }
}

import { DynamicModule, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import type { Logger } from 'pino';
import { SidecarConfig } from './sidecar-config';
import { DecisionCoreModule } from '../core/decision/decision-core.module';
import {
  AGENT_SOURCE,
  DECISION_LOG,
  DECISION_SETTINGS,
  DecisionSettings,
  POLICY_SOURCE,
  RATE_LIMITER,
  BUDGET_LEDGER,
  USAGE_GATE,
  VERIFICATION_KEYS,
} from '../core/decision/decision-sources';
import { LOGGER, LoggingModule } from '../core/logging/logging.module';
import { SlidingWindowLimiter } from '../core/policy-engine/sliding-window-limiter';
import { PdpService } from '../core/pdp/pdp.service';
import { ADAPTER_HTTP_SETTINGS, AdapterHttpHandler, AdapterHttpSettings } from '../core/pdp/adapter-http.handler';
import { OutcomeRecorder } from '../core/pdp/outcome-recorder';
import { ADAPTER_AUTHENTICATION, OUTCOME_LEDGER } from '../core/decision/adapter-ports';
import { APPROVAL_DESK } from '../core/decision/approval-ports';
import { GatewayApprovals } from './gateway-approvals';
import { ProxyHandler } from '../core/proxy/proxy-handler';
import { DECISION_TOKENS, DecisionTokenSigner } from '../core/decision/decision-token';
import { UPSTREAM_CREDENTIALS } from '../core/decision/upstream-credentials';
import { EdgeGrants } from './edge-grants';
import { GatewayLink } from './gateway-link';
import { sidecarKeys } from './sidecar-keys';
import { MCP_SETTINGS, McpHandler, McpSettings } from '../core/mcp/mcp.handler';
import { readMcpServers } from '../core/mcp/mcp-server-list';
import { AgentTokenMcpAuthentication, MCP_AUTHENTICATION } from '../core/mcp/mcp-authentication';
import { McpGovernor } from '../core/mcp/mcp-governor';
import { NO_PINNING, TOOL_PINS } from '../core/mcp/tool-pins';
import { EdgeToolPins } from './edge-tool-pins';
import { EdgeBudgetLedger } from './edge-budget-ledger';
import { AuditForwarder } from './audit-forwarder';
import { AuditWal } from './audit-wal';
import { BundleStore } from './bundle-store';
import { BundleSync } from './bundle-sync';
import { BundleApiKeys, EdgeOutcomes } from './edge-adapter-ports';
import { EdgeApprovalStatus } from './edge-approval-status';
import { SidecarHandler } from './sidecar-handler';
import { SidecarHealth } from './sidecar-health';
import { SidecarStateModule } from './sidecar-state.module';
import { SidecarTelemetry } from './sidecar-telemetry';
import { ShutdownStateModule } from '../core/common/shutdown-state';
import { TelemetryModule } from '../core/telemetry/telemetry.module';

/** The edge sidecar grants no quota (the gateway meters its organization) and never waits for a quota lookup. */
const NO_QUOTA = { tryConsume: () => true };

/** Closes the audit buffer last, after the transports stopped. */
class AuditWalCloser implements OnApplicationShutdown {
  constructor(
    @Inject(AuditWal) private readonly wal: AuditWal,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.wal.close();
    this.logger.info(this.wal.state(), 'audit buffer closed');
  }
}

/**
 * The edge sidecar (docs/sidecar.md): the decision core bound to the signed bundle
 * (policies, agents, keys, MCP tool pins), an in-process rate limiter, no quota, and the write-ahead audit
 * buffer; bundle sync and audit forwarding on timers; the lean HTTP transports. No TypeORM, no
 * billing, no analytics anywhere in its module graph (`npm run lint` checks its imports).
 */
@Module({})
export class SidecarModule {
  static forRoot(config: SidecarConfig, logger: Logger): DynamicModule {
    return {
      module: SidecarModule,
      imports: [
        LoggingModule.forRoot(logger),
        ShutdownStateModule,
        TelemetryModule.forRoot({ settings: config.telemetry, app: 'sidecar', host: config.host, version: config.version }),
        SidecarStateModule.forRoot(config),
        ScheduleModule.forRoot(),
        DecisionCoreModule.register({
          sources: [
            { provide: POLICY_SOURCE, useExisting: BundleStore },
            { provide: AGENT_SOURCE, inject: [BundleStore], useFactory: (store: BundleStore) => store.agentSource },
            { provide: VERIFICATION_KEYS, useExisting: BundleStore },
            { provide: USAGE_GATE, useValue: NO_QUOTA },
            { provide: DECISION_LOG, useExisting: AuditWal },
            { provide: APPROVAL_DESK, useClass: GatewayApprovals },
            { provide: RATE_LIMITER, useFactory: () => new SlidingWindowLimiter() },
            EdgeBudgetLedger,
            { provide: BUDGET_LEDGER, useExisting: EdgeBudgetLedger },
            {
              provide: DECISION_SETTINGS,
              inject: [BundleStore],
              useFactory: (store: BundleStore): DecisionSettings => ({
                mode: config.mode,
                // The issuer comes with each bundle.
                get tokenIssuer() {
                  return store.tokenIssuer;
                },
              }),
            },
          ],
        }),
      ],
      providers: [
        AuditWalCloser,
        AuditForwarder,
        BundleSync,
        SidecarHealth,
        SidecarHandler,
        SidecarTelemetry,
        PdpService,
        ProxyHandler,
        {
          provide: EdgeGrants,
          inject: [BundleStore, GatewayLink, LOGGER],
          useFactory: (store: BundleStore, link: GatewayLink, log: Logger) => new EdgeGrants(sidecarKeys(config.cacheDir), store, link, config.cacheDir, log),
        },
        { provide: UPSTREAM_CREDENTIALS, useExisting: EdgeGrants },
        {
          provide: DECISION_TOKENS,
          inject: [EdgeGrants, BundleStore],
          useFactory: (grants: EdgeGrants, store: BundleStore): DecisionTokenSigner | null => (config.decisionTokens ? new DecisionTokenSigner(() => grants.tokenKey(), () => store.tokenIssuer) : null),
        },
        AdapterHttpHandler,
        EdgeApprovalStatus,
        OutcomeRecorder,
        { provide: ADAPTER_AUTHENTICATION, useClass: BundleApiKeys },
        { provide: OUTCOME_LEDGER, useClass: EdgeOutcomes },
        { provide: ADAPTER_HTTP_SETTINGS, useValue: { maxJsonBytes: config.maxJsonBytes } satisfies AdapterHttpSettings },
        McpHandler,
        McpGovernor,
        EdgeToolPins,
        { provide: MCP_AUTHENTICATION, useClass: AgentTokenMcpAuthentication },
        { provide: TOOL_PINS, inject: [EdgeToolPins], useFactory: (pins: EdgeToolPins) => (config.mcp.pin ? pins : NO_PINNING) },
        {
          provide: MCP_SETTINGS,
          useFactory: (): McpSettings => {
            const servers = config.mcp.serversFile === undefined ? [] : readMcpServers(config.mcp.serversFile);
            return {
              maxJsonBytes: config.maxJsonBytes,
              version: config.version,
              servers: new Map(servers.map((server) => [server.name, server])),
              allowedHosts: config.mcp.allowedHosts,
              authorizationServers: [],
            };
          },
        },
      ],
    };
  }
}

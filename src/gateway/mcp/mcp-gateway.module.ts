import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { AppConfig } from '../../core/config/app-config';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { MCP_AUTHENTICATION } from '../../core/mcp/mcp-authentication';
import { ManagedIdentityModule } from '../access/managed-identity.module';
import { GatewayMcpAuthentication } from './gateway-mcp-authentication';
import { McpGovernor } from '../../core/mcp/mcp-governor';
import { MCP_SETTINGS, McpHandler, McpSettings } from '../../core/mcp/mcp.handler';
import { readMcpServers } from '../../core/mcp/mcp-server-list';
import { NO_PINNING, TOOL_PINS } from '../../core/mcp/tool-pins';
import { EdgeToolPinsController } from './edge-tool-pins.controller';
import { STORED_PIN_SETTINGS, StoredPinSettings, StoredToolPins } from './stored-tool-pins';
import { ToolPinsController } from './tool-pins.controller';
import { ToolPinsService } from './tool-pins.service';

/**
 * The MCP gateway on the gateway (docs/mcp.md): the servers of MCP_SERVERS relayed at
 * `/mcp/<name>` (a lean route, gateway.ts), pins in PostgreSQL (MCP_PIN) and their admin API.
 */
@Module({
  imports: [GatewayDecisionsModule, AuditModule, ManagedIdentityModule],
  controllers: [ToolPinsController, EdgeToolPinsController],
  providers: [
    McpHandler,
    McpGovernor,
    StoredToolPins,
    ToolPinsService,
    { provide: MCP_AUTHENTICATION, useClass: GatewayMcpAuthentication },
    { provide: STORED_PIN_SETTINGS, inject: [AppConfig], useFactory: (config: AppConfig): StoredPinSettings => ({ holdNewcomers: config.mcp.holdNewcomers }) },
    { provide: TOOL_PINS, inject: [AppConfig, StoredToolPins], useFactory: (config: AppConfig, stored: StoredToolPins) => (config.mcp.pin ? stored : NO_PINNING) },
    {
      provide: MCP_SETTINGS,
      inject: [AppConfig],
      useFactory: (config: AppConfig): McpSettings => {
        const servers = config.mcp.serversFile === undefined ? [] : readMcpServers(config.mcp.serversFile);
        return {
          maxJsonBytes: config.http.maxJsonBytes,
          version: config.version,
          servers: new Map(servers.map((server) => [server.name, server])),
          publicUrl: config.http.publicUrlSet ? config.http.publicUrl : undefined,
          allowedHosts: config.mcp.allowedHosts,
          authorizationServers: [config.oidc.issuer ?? config.http.publicUrl],
        };
      },
    },
  ],
  exports: [McpHandler],
})
export class McpGatewayModule {}

import { Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { AuditModule } from '../audit/audit.module';
import { AppConfig } from '../config/app-config';
import { GatewayDecisionsModule } from '../gateway-decisions/gateway-decisions.module';
import { LOGGER } from '../logging/logging.module';
import { MCP_SETTINGS, McpHandler, McpSettings } from '../mcp/mcp.handler';
import { readMcpServers } from '../mcp/mcp-server-list';
import { McpUpstreams } from '../mcp/mcp-upstreams';
import { NO_PINNING, TOOL_PINS } from '../mcp/tool-pins';
import { EdgeToolPinsController } from './edge-tool-pins.controller';
import { StoredToolPins } from './stored-tool-pins';
import { ToolPinsController } from './tool-pins.controller';
import { ToolPinsService } from './tool-pins.service';

/**
 * The MCP gateway on the gateway (docs/mcp.md): the servers of MCP_SERVERS served at
 * `/mcp/<name>` (a lean route, gateway.ts), tool pins in PostgreSQL (MCP_PIN) and their admin API.
 */
@Module({
  imports: [GatewayDecisionsModule, AuditModule],
  controllers: [ToolPinsController, EdgeToolPinsController],
  providers: [
    McpHandler,
    StoredToolPins,
    ToolPinsService,
    {
      provide: McpUpstreams,
      inject: [AppConfig, LOGGER],
      useFactory: (config: AppConfig, logger: Logger) => {
        const servers = config.mcp.serversFile === undefined ? [] : readMcpServers(config.mcp.serversFile);
        return new McpUpstreams(new Map(servers.map((server) => [server.name, server])), config.version, logger);
      },
    },
    { provide: TOOL_PINS, inject: [AppConfig, StoredToolPins], useFactory: (config: AppConfig, stored: StoredToolPins) => (config.mcp.pin ? stored : NO_PINNING) },
    { provide: MCP_SETTINGS, inject: [AppConfig], useFactory: (config: AppConfig): McpSettings => ({ maxJsonBytes: config.http.maxJsonBytes, version: config.version }) },
  ],
  exports: [McpHandler],
})
export class McpGatewayModule {}

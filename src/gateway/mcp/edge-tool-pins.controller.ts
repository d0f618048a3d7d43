import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { definitionSize, ToolDefinition } from '../../core/mcp/tool-definition';
import { MAX_DEFINITION_CHARS } from '../../core/mcp/mcp-listing';
import type { PinState } from '../../core/mcp/tool-pins';
import { SidecarTokenAccepted } from '../access/sidecar-token-access';
import { StoredToolPins } from './stored-tool-pins';

/** Most tools one check names: an MCP server's list, far above any real one. */
const MAX_TOOLS = 1000;
const MAX_NAME_LENGTH = 256;

/**
 * The gateway's tool pins for the edge (docs/mcp.md "On the sidecar"): a sidecar whose bundle
 * pins none or another definition of a tool asks here, with its sidecar token, so that pins,
 * holds and their alerts are the organization's one record whichever process met the tool first.
 */
@ApiExcludeController()
@AdminAuth()
@SidecarTokenAccepted()
@Controller('api/v1/edge/tool-pins')
export class EdgeToolPinsController {
  constructor(private readonly pins: StoredToolPins) {}

  @Post()
  @HttpCode(200)
  async check(@CurrentAdmin() principal: AdminPrincipal, @Body() body: unknown): Promise<{ states: Record<string, PinState> }> {
    const { server, tools } = checkRequestOf(body);
    const states = await this.pins.check(principal.orgId, server, tools);
    return { states: Object.fromEntries(states) };
  }
}

/** The body, checked field by field: `{server, tools: [{name, description, …every field pinned}]}`. */
function checkRequestOf(body: unknown): { server: string; tools: ToolDefinition[] } {
  const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (!isName(fields.server)) throw AppError.invalid(`server must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
  if (!Array.isArray(fields.tools) || fields.tools.length === 0 || fields.tools.length > MAX_TOOLS) throw AppError.invalid(`tools must be an array of 1 to ${MAX_TOOLS} tool definitions`);
  const tools = fields.tools.map((value: unknown, index) => {
    const tool = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
    if (!isName(tool.name) || typeof tool.description !== 'string') throw AppError.invalid(`tools[${index}] needs a name and a description (strings)`);
    const definition: ToolDefinition = { ...tool, name: tool.name, description: tool.description };
    if (definitionSize(definition) > MAX_DEFINITION_CHARS) throw AppError.invalid(`tools[${index}] is larger than ${MAX_DEFINITION_CHARS} characters`);
    return definition;
  });
  if (new Set(tools.map((tool) => tool.name)).size !== tools.length) throw AppError.invalid('tools must name each tool once');
  return { server: fields.server, tools };
}

function isName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_NAME_LENGTH;
}

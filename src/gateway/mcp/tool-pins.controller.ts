import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { ToolPinListView, ToolPinQueryDto, ToolPinView } from './tool-pins.dto';
import { ToolPinsService } from './tool-pins.service';

@ApiTags('mcp')
@AdminAuth()
@Controller('admin/mcp/tools')
export class ToolPinsController {
  constructor(private readonly pins: ToolPinsService) {}

  @Get()
  @ApiOperation({ summary: 'The organization’s pinned MCP tools; a held one with the definition its server offers now and the diff' })
  @ApiOkResponse({ type: ToolPinListView })
  async list(@CurrentAdmin() admin: AdminPrincipal, @Query() query: ToolPinQueryDto): Promise<ToolPinListView> {
    return { tools: await this.pins.list(admin, query) };
  }

  @Post(':server/:tool/accept')
  @HttpCode(200)
  @ApiOperation({ summary: 'Accept the definition a held tool’s server offers now: it is pinned and the tool may be called again (recorded in the audit trail)' })
  @ApiOkResponse({ type: ToolPinView })
  @ApiNotFoundResponse({ description: 'No such tool among this organization’s pins', type: ErrorBody })
  accept(@CurrentAdmin() admin: AdminPrincipal, @Param('server') server: string, @Param('tool') tool: string): Promise<ToolPinView> {
    return this.pins.accept(admin, server, tool);
  }
}

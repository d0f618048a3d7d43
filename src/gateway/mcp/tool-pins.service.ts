import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { changedFields, changeOf, ToolDefinition } from '../../core/mcp/tool-definition';
import { StoredToolPins } from './stored-tool-pins';
import { ToolPinQueryDto, ToolPinView } from './tool-pins.dto';

interface PinRow {
  server: string;
  tool: string;
  pinned_definition: ToolDefinition;
  pinned_at: Date;
  current_definition: ToolDefinition | null;
  held_since: Date | null;
}

/** The admin side of tool pinning: an organization's pins, and accepting a changed definition. */
@Injectable()
export class ToolPinsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly pins: StoredToolPins,
    private readonly audit: AuditService,
  ) {}

  async list(admin: AdminPrincipal, query: ToolPinQueryDto): Promise<ToolPinView[]> {
    const where = ['org_id = $1'];
    const params: unknown[] = [admin.orgId];
    if (query.server !== undefined) where.push(`server = $${params.push(query.server)}`);
    if (query.held !== undefined) where.push(query.held === 'true' ? 'current_hash IS NOT NULL' : 'current_hash IS NULL');
    const rows: PinRow[] = await this.dataSource.query(
      `SELECT server, tool, pinned_definition, pinned_at, current_definition, held_since FROM mcp_tool_pins WHERE ${where.join(' AND ')} ORDER BY server, tool`,
      params,
    );
    return rows.map(toView);
  }

  /** Pins the definition the server offers now, so the tool is called again; 404 for a tool this organization never met. */
  async accept(admin: AdminPrincipal, server: string, tool: string): Promise<ToolPinView> {
    const rows: PinRow[] = await this.dataSource.query(
      `WITH accepted AS (UPDATE mcp_tool_pins SET pinned_hash = coalesce(current_hash, pinned_hash), pinned_definition = coalesce(current_definition, pinned_definition),
          pinned_at = CASE WHEN current_hash IS NULL THEN pinned_at ELSE now() END, current_hash = NULL, current_definition = NULL, held_since = NULL
        WHERE org_id = $1 AND server = $2 AND tool = $3
        RETURNING server, tool, pinned_definition, pinned_at, current_definition, held_since) SELECT * FROM accepted`,
      [admin.orgId, server, tool],
    );
    const row = rows[0] as PinRow | undefined;
    if (row === undefined) throw AppError.notFound('MCP tool', `${server}/${tool}`);
    this.pins.forget(admin.orgId, server, tool);
    this.audit.recordAdminEvent(admin, { action: 'mcp-tool.accept', details: { server, tool, next: row.pinned_definition } });
    return toView(row);
  }
}

function toView(row: PinRow): ToolPinView {
  const current = row.current_definition;
  const changes = current === null ? [] : changeOf(row.pinned_definition, current);
  const diff: ToolPinView['diff'] = {};
  if (current !== null) for (const field of changedFields(row.pinned_definition, current)) diff[field] = { pinned: row.pinned_definition[field] ?? null, current: current[field] ?? null };
  return {
    server: row.server,
    tool: row.tool,
    held: current !== null,
    pinnedAt: new Date(row.pinned_at).toISOString(),
    heldSince: row.held_since === null ? null : new Date(row.held_since).toISOString(),
    pinned: row.pinned_definition,
    current,
    changes,
    diff,
  };
}

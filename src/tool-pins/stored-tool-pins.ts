import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { LRUCache } from 'lru-cache';
import { changeOf, definitionHash, ToolDefinition } from '../mcp/tool-definition';
import type { PinState, ToolPins } from '../mcp/tool-pins';

/** Pinned definitions remembered per instance (by their hash, which a change alters, so never stale). */
const MAX_REMEMBERED = 10_000;

interface PinRow {
  tool: string;
  pinned_hash: string;
  pinned_definition: ToolDefinition;
  current_hash: string | null;
}

/**
 * The gateway's tool pins, in PostgreSQL (mcp_tool_pins). A definition whose hash is the pinned
 * one is remembered, so a governed call to an unchanged tool reads no row; a new or changed
 * definition always reaches the database, where a conditional update decides which request
 * first met the change (the one that raises its alert).
 */
@Injectable()
export class StoredToolPins implements ToolPins {
  private readonly pinned = new LRUCache<string, true>({ max: MAX_REMEMBERED });

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async check(orgId: string, server: string, tools: readonly ToolDefinition[]): Promise<Map<string, PinState>> {
    const states = new Map<string, PinState>();
    const unknown: Array<{ definition: ToolDefinition; hash: string }> = [];
    for (const definition of tools) {
      const hash = definitionHash(definition);
      if (this.pinned.has(key(orgId, server, definition.name, hash))) states.set(definition.name, PINNED);
      else unknown.push({ definition, hash });
    }
    if (unknown.length === 0) return states;
    const rows: PinRow[] = await this.dataSource.query(
      'SELECT tool, pinned_hash, pinned_definition, current_hash FROM mcp_tool_pins WHERE org_id = $1 AND server = $2 AND tool = ANY($3)',
      [orgId, server, unknown.map(({ definition }) => definition.name)],
    );
    const byTool = new Map(rows.map((row) => [row.tool, row]));
    for (const { definition, hash } of unknown) states.set(definition.name, await this.stateOf(orgId, server, definition, hash, byTool.get(definition.name)));
    return states;
  }

  private async stateOf(orgId: string, server: string, definition: ToolDefinition, hash: string, row: PinRow | undefined): Promise<PinState> {
    if (row === undefined) {
      await this.dataSource.query(
        `INSERT INTO mcp_tool_pins (org_id, server, tool, pinned_hash, pinned_definition) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
        [orgId, server, definition.name, hash, JSON.stringify(definition)],
      );
      const [stored] = (await this.dataSource.query('SELECT tool, pinned_hash, pinned_definition, current_hash FROM mcp_tool_pins WHERE org_id = $1 AND server = $2 AND tool = $3', [
        orgId,
        server,
        definition.name,
      ])) as PinRow[];
      // Another request may have pinned another definition a moment before: check against that one.
      if (stored.pinned_hash !== hash) return this.stateOf(orgId, server, definition, hash, stored);
    } else if (row.pinned_hash !== hash) {
      return this.held(orgId, server, definition, hash, row);
    } else if (row.current_hash !== null) {
      // The server offers the pinned definition again: nothing is held any more.
      await this.dataSource.query('UPDATE mcp_tool_pins SET current_hash = NULL, current_definition = NULL, held_since = NULL WHERE org_id = $1 AND server = $2 AND tool = $3', [
        orgId,
        server,
        definition.name,
      ]);
    }
    this.remember(key(orgId, server, definition.name, hash));
    return PINNED;
  }

  private async held(orgId: string, server: string, definition: ToolDefinition, hash: string, row: PinRow): Promise<PinState> {
    const changes = changeOf(row.pinned_definition, definition);
    if (row.current_hash === hash) return { pinned: false, changes, newlyHeld: false };
    // In a CTE, so the query answers the updated rows alike on every driver (an UPDATE's own RETURNING comes with its row count).
    const updated: unknown[] = await this.dataSource.query(
      `WITH held AS (UPDATE mcp_tool_pins SET current_hash = $4, current_definition = $5, held_since = coalesce(held_since, now())
        WHERE org_id = $1 AND server = $2 AND tool = $3 AND current_hash IS DISTINCT FROM $4 RETURNING tool) SELECT tool FROM held`,
      [orgId, server, definition.name, hash, JSON.stringify(definition)],
    );
    return { pinned: false, changes, newlyHeld: updated.length > 0 };
  }

  /** Forgets what this instance remembered of a tool (an admin accepted another definition). */
  forget(orgId: string, server: string, tool: string): void {
    const prefix = `${orgId}\u0000${server}\u0000${tool}\u0000`;
    const forgotten = [...this.pinned.keys()].filter((entry) => entry.startsWith(prefix));
    for (const entry of forgotten) this.pinned.delete(entry);
  }

  private remember(entry: string): void {
    this.pinned.set(entry, true);
  }
}

const PINNED: PinState = Object.freeze({ pinned: true, changes: [], newlyHeld: false }) as PinState;

function key(orgId: string, server: string, tool: string, hash: string): string {
  return `${orgId}\u0000${server}\u0000${tool}\u0000${hash}`;
}

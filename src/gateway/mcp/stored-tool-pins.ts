import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { LRUCache } from 'lru-cache';
import { changeOf, definitionHash, ToolDefinition } from '../../core/mcp/tool-definition';
import type { PinCheckOptions, PinState, ToolPins } from '../../core/mcp/tool-pins';

/** Pinned definitions remembered per instance (the pinned hash by organization, server and name): an LRU, O(1) per operation. */
const MAX_REMEMBERED = 10_000;

/** The `pinned_hash` of a definition held as new (MCP_PIN=strict): nothing of it was ever pinned. */
export const NOTHING_PINNED = '';

/** Settings of the stored pins. */
export const STORED_PIN_SETTINGS = Symbol('StoredPinSettings');
export interface StoredPinSettings {
  /** MCP_PIN=strict: a definition new on a server whose others are pinned is held, not pinned. */
  holdNewcomers: boolean;
}

interface PinRow {
  tool: string;
  pinned_hash: string;
  pinned_definition: ToolDefinition;
  current_hash: string | null;
}

const SELECT_ROWS = 'SELECT tool, pinned_hash, pinned_definition, current_hash FROM mcp_tool_pins WHERE org_id = $1 AND server = $2 AND tool = ANY($3)';

/**
 * The gateway's pins, in PostgreSQL (mcp_tool_pins). A definition whose hash is the pinned one
 * is remembered, so a governed call to an unchanged tool reads no row; a new or changed
 * definition always reaches the database, where a conditional update decides which request
 * first met the change (the one that raises its alert). A listing reads every row (`fresh`), so a
 * server back on its pinned definition clears the hold whichever instance recorded it.
 */
@Injectable()
export class StoredToolPins implements ToolPins {
  readonly pinning = true;
  private readonly pinned = new LRUCache<string, string>({ max: MAX_REMEMBERED });

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(STORED_PIN_SETTINGS) private readonly settings: StoredPinSettings,
  ) {}

  async check(orgId: string, server: string, tools: readonly ToolDefinition[], options: PinCheckOptions = {}): Promise<Map<string, PinState>> {
    const states = new Map<string, PinState>();
    const unknown: Array<{ definition: ToolDefinition; hash: string }> = [];
    for (const definition of tools) {
      const hash = definitionHash(definition);
      if (options.fresh !== true && this.pinned.get(key(orgId, server, definition.name)) === hash) states.set(definition.name, PINNED);
      else unknown.push({ definition, hash });
    }
    if (unknown.length === 0) return states;
    const rows: PinRow[] = await this.dataSource.query(SELECT_ROWS, [orgId, server, unknown.map(({ definition }) => definition.name)]);
    const byTool = new Map(rows.map((row) => [row.tool, row]));
    const serverKnown = unknown.some(({ definition }) => !byTool.has(definition.name)) ? await this.serverPinned(orgId, server) : true;
    for (const { definition, hash } of unknown) states.set(definition.name, await this.stateOf(orgId, server, definition, hash, byTool.get(definition.name), serverKnown));
    return states;
  }

  /** True when the organization pinned anything of this server before. */
  private async serverPinned(orgId: string, server: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query('SELECT 1 FROM mcp_tool_pins WHERE org_id = $1 AND server = $2 LIMIT 1', [orgId, server]);
    return rows.length > 0;
  }

  private async stateOf(orgId: string, server: string, definition: ToolDefinition, hash: string, row: PinRow | undefined, serverKnown: boolean): Promise<PinState> {
    if (row === undefined) return this.firstSeen(orgId, server, definition, hash, serverKnown);
    if (row.pinned_hash !== hash) return this.held(orgId, server, definition, hash, row);
    if (row.current_hash !== null) {
      // The server offers the pinned definition again: nothing is held any more.
      await this.dataSource.query('UPDATE mcp_tool_pins SET current_hash = NULL, current_definition = NULL, held_since = NULL WHERE org_id = $1 AND server = $2 AND tool = $3', [
        orgId,
        server,
        definition.name,
      ]);
    }
    this.remember(key(orgId, server, definition.name), hash);
    return PINNED;
  }

  /** A definition nobody of the organization met: pinned (alerted when its server was pinned before), or held as new under MCP_PIN=strict. */
  private async firstSeen(orgId: string, server: string, definition: ToolDefinition, hash: string, serverKnown: boolean): Promise<PinState> {
    const holdAsNew = serverKnown && this.settings.holdNewcomers;
    const inserted: unknown[] = await this.dataSource.query(
      holdAsNew
        ? `WITH pinned AS (INSERT INTO mcp_tool_pins (org_id, server, tool, pinned_hash, pinned_definition, current_hash, current_definition, held_since)
             VALUES ($1, $2, $3, '${NOTHING_PINNED}', $6, $4, $5, now()) ON CONFLICT DO NOTHING RETURNING tool) SELECT tool FROM pinned`
        : `WITH pinned AS (INSERT INTO mcp_tool_pins (org_id, server, tool, pinned_hash, pinned_definition) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING tool) SELECT tool FROM pinned`,
      holdAsNew
        ? [orgId, server, definition.name, hash, JSON.stringify(definition), JSON.stringify({ name: definition.name, description: '' })]
        : [orgId, server, definition.name, hash, JSON.stringify(definition)],
    );
    if (inserted.length === 0) {
      // Another request pinned a definition a moment before: check against that one.
      const [stored] = (await this.dataSource.query(SELECT_ROWS, [orgId, server, [definition.name]])) as PinRow[];
      return this.stateOf(orgId, server, definition, hash, stored, true);
    }
    if (holdAsNew) return { pinned: false, changes: [], newlyHeld: true, newcomer: true };
    this.remember(key(orgId, server, definition.name), hash);
    return serverKnown ? { pinned: true, changes: [], newlyHeld: false, newcomer: true } : PINNED;
  }

  private async held(orgId: string, server: string, definition: ToolDefinition, hash: string, row: PinRow): Promise<PinState> {
    // What this instance remembered of the tool no longer holds: its next check reads the row, so a server going back to the pinned definition clears the hold.
    this.forget(orgId, server, definition.name);
    const newcomer = row.pinned_hash === NOTHING_PINNED;
    const changes = newcomer ? [] : changeOf(row.pinned_definition, definition);
    if (row.current_hash === hash) return { pinned: false, changes, newlyHeld: false, ...(newcomer ? { newcomer } : {}) };
    // In a CTE, so the query answers the updated rows alike on every driver (an UPDATE's own RETURNING comes with its row count).
    const updated: unknown[] = await this.dataSource.query(
      `WITH held AS (UPDATE mcp_tool_pins SET current_hash = $4, current_definition = $5, held_since = coalesce(held_since, now())
        WHERE org_id = $1 AND server = $2 AND tool = $3 AND current_hash IS DISTINCT FROM $4 RETURNING tool) SELECT tool FROM held`,
      [orgId, server, definition.name, hash, JSON.stringify(definition)],
    );
    return { pinned: false, changes, newlyHeld: updated.length > 0, ...(newcomer ? { newcomer } : {}) };
  }

  /** Forgets what this instance remembered of a definition (an admin accepted another, or it changed). */
  forget(orgId: string, server: string, tool: string): void {
    this.pinned.delete(key(orgId, server, tool));
  }

  private remember(entry: string, hash: string): void {
    this.pinned.set(entry, hash);
  }
}

const PINNED: PinState = Object.freeze({ pinned: true, changes: [], newlyHeld: false }) as PinState;

function key(orgId: string, server: string, tool: string): string {
  return `${orgId}\u0000${server}\u0000${tool}`;
}

import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { McpErrorCode } from './mcp-errors';
import { definitionSize, promptDefinition, templateDefinition, ToolDefinition, toolDefinition } from './tool-definition';

/** What a server lists: tools, prompts, resource templates (all three pinned) and resources. */
export type ListingKind = 'tool' | 'prompt' | 'template' | 'resource';

/** One listed item: its name (a resource's URI), its definition as pinned, and the item as listed. */
export interface Listed {
  name: string;
  definition: ToolDefinition;
  item: Record<string, unknown>;
}

/** The listing method of each kind, and the field of its result that lists. */
export const LISTINGS: Readonly<Record<ListingKind, { method: string; field: string; changed: string }>> = {
  tool: { method: 'tools/list', field: 'tools', changed: 'notifications/tools/list_changed' },
  prompt: { method: 'prompts/list', field: 'prompts', changed: 'notifications/prompts/list_changed' },
  template: { method: 'resources/templates/list', field: 'resourceTemplates', changed: 'notifications/resources/list_changed' },
  resource: { method: 'resources/list', field: 'resources', changed: 'notifications/resources/list_changed' },
};

/** The kind a listing method lists, if it is one. */
export const KIND_OF_METHOD: ReadonlyMap<string, ListingKind> = new Map(Object.entries(LISTINGS).map(([kind, { method }]) => [method, kind as ListingKind]));

/** A governed call is checked against a listing no older than this (docs/mcp.md): a definition changed later is met by the next listing. */
export const LISTING_MAX_AGE_MS = 30_000;
/** Most items one listing (all its pages) may hold, and the largest definition, in characters of canonical JSON: a larger listing is refused. */
export const MAX_LISTED = 1_000;
export const MAX_DEFINITION_CHARS = 64 * 1024;
/** Pages of one listing the gateway reads itself, so a server that pages for ever cannot hold a call. */
const MAX_PAGES = 20;

/** The listed items of a listing result, each bounded; a listing beyond the bounds is refused with a clear error. */
export function listedItems(kind: ListingKind, result: Record<string, unknown>, server: string): Listed[] {
  const raw = result[LISTINGS[kind].field];
  if (!Array.isArray(raw)) return [];
  if (raw.length > MAX_LISTED) throw tooLarge(server, kind, `${raw.length} items, more than ${MAX_LISTED}`);
  return raw.filter((item): item is Record<string, unknown> => typeof item === 'object' && item !== null).map((item) => listedOf(kind, item, server));
}

function listedOf(kind: ListingKind, item: Record<string, unknown>, server: string): Listed {
  const name = String(kind === 'resource' ? item.uri : item.name);
  const definition =
    kind === 'tool'
      ? toolDefinition(item as { name: string })
      : kind === 'prompt'
        ? promptDefinition(item as { name: string })
        : kind === 'template'
          ? templateDefinition(item as { name: string })
          : { name, description: '' };
  if (kind !== 'resource' && definitionSize(definition) > MAX_DEFINITION_CHARS) throw tooLarge(server, kind, `${name} is larger than ${MAX_DEFINITION_CHARS} characters`);
  return { name, definition, item };
}

function tooLarge(server: string, kind: ListingKind, what: string): McpError {
  return new McpError(McpErrorCode.UpstreamUnavailable, `MCP server ${server} lists too much to be checked (${LISTINGS[kind].method}: ${what}); the gateway refuses such a listing`);
}

/** Sends a request of the gateway's own to the upstream session and answers its result. */
export type UpstreamRequest = (method: string, params: Record<string, unknown>) => Promise<Record<string, unknown>>;

/**
 * What one upstream session lists, as governed calls check it: read by the gateway itself when
 * missing, older than LISTING_MAX_AGE_MS or announced changed (`notifications/*\/list_changed`),
 * else taken from the agent's own complete listings. Bounded by MAX_LISTED per kind.
 */
export class McpListings {
  private readonly known = new Map<ListingKind, { items: Map<string, Listed>; readMs: number }>();
  private readonly reading = new Map<ListingKind, Promise<Map<string, Listed>>>();

  constructor(
    private readonly server: string,
    private readonly request: UpstreamRequest,
  ) {}

  async find(kind: ListingKind, name: string, nowMs = Date.now()): Promise<Listed | undefined> {
    const known = this.known.get(kind);
    if (known !== undefined && nowMs - known.readMs < LISTING_MAX_AGE_MS) return known.items.get(name);
    return (await this.read(kind)).get(name);
  }

  /** A complete listing the agent received (one page, no cursor): the freshest there is. */
  learn(kind: ListingKind, items: readonly Listed[], nowMs = Date.now()): void {
    this.known.set(kind, { items: new Map(items.map((item) => [item.name, item])), readMs: nowMs });
  }

  /** The server announced a change: the next governed call reads the listing again. */
  changed(notification: string): void {
    for (const [kind, { changed }] of Object.entries(LISTINGS)) if (changed === notification) this.known.delete(kind as ListingKind);
  }

  private read(kind: ListingKind): Promise<Map<string, Listed>> {
    const existing = this.reading.get(kind);
    if (existing !== undefined) return existing;
    const reading = this.readPages(kind).finally(() => this.reading.delete(kind));
    this.reading.set(kind, reading);
    return reading;
  }

  private async readPages(kind: ListingKind): Promise<Map<string, Listed>> {
    const readMs = Date.now();
    const items = new Map<string, Listed>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await this.request(LISTINGS[kind].method, cursor === undefined ? {} : { cursor });
      for (const item of listedItems(kind, result, this.server)) items.set(item.name, item);
      if (items.size > MAX_LISTED) throw tooLarge(this.server, kind, `more than ${MAX_LISTED} items`);
      cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
      if (cursor === undefined) break;
    }
    this.known.set(kind, { items, readMs });
    return items;
  }
}

import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { changeOf, definitionHash, ToolDefinition } from '../core/mcp/tool-definition';
import type { PinState, ToolPins } from '../core/mcp/tool-pins';
import { BundleStore } from './bundle-store';
import { GatewayLink } from './gateway-link';

/** Definitions the gateway pinned lately, remembered until a bundle carries them. */
const MAX_REMEMBERED = 10_000;

const PINNED: PinState = Object.freeze({ pinned: true, changes: [], newlyHeld: false }) as PinState;

/**
 * Tool pins at the edge (docs/mcp.md "On the sidecar"). A definition the bundle in force pins is
 * settled here, with no call. Any other (a tool the bundle does not pin yet, or a changed one) is
 * asked of the gateway (`POST /api/v1/edge/tool-pins`), which keeps the organization's pins and
 * holds and raises the alerts. While the gateway cannot be reached such a tool is held: the
 * sidecar never pins on its own, so it never trusts a definition the gateway would not.
 */
@Injectable()
export class EdgeToolPins implements ToolPins {
  readonly pinning = true;
  /** Hashes the gateway answered as pinned, by server and tool, for tools the bundle does not pin yet. */
  private readonly pinnedByGateway = new LRUCache<string, string>({ max: MAX_REMEMBERED });

  constructor(
    private readonly store: BundleStore,
    private readonly gateway: GatewayLink,
  ) {}

  async check(_orgId: string, server: string, tools: readonly ToolDefinition[]): Promise<Map<string, PinState>> {
    const states = new Map<string, PinState>();
    const unsettled: ToolDefinition[] = [];
    for (const definition of tools) {
      if (this.settledHere(server, definition)) states.set(definition.name, PINNED);
      else unsettled.push(definition);
    }
    if (unsettled.length === 0) return states;
    const answered = await this.askGateway(server, unsettled);
    for (const definition of unsettled) {
      const state = answered?.get(definition.name) ?? this.heldOffline(server, definition);
      if (state.pinned) this.remember(server, definition);
      states.set(definition.name, state);
    }
    return states;
  }

  /** True when the bundle pins this very definition, or (the bundle pinning none) the gateway lately did. */
  private settledHere(server: string, definition: ToolDefinition): boolean {
    const hash = definitionHash(definition);
    const pin = this.store.toolPin(server, definition.name);
    if (pin !== undefined) return pin.hash === hash;
    return this.pinnedByGateway.get(key(server, definition.name)) === hash;
  }

  private async askGateway(server: string, tools: ToolDefinition[]): Promise<Map<string, PinState> | undefined> {
    const answer = await this.gateway.post('/api/v1/edge/tool-pins', [Buffer.from(JSON.stringify({ server, tools }))]);
    if (answer === 'unreachable' || answer.status !== 200) return undefined;
    try {
      return statesOf((JSON.parse(answer.text) as { states?: unknown }).states);
    } catch {
      return undefined;
    }
  }

  /** Held while the gateway is away: changed since the bundle's pin, or not pinned by anyone yet. */
  private heldOffline(server: string, definition: ToolDefinition): PinState {
    const pin = this.store.toolPin(server, definition.name);
    if (pin !== undefined) return { pinned: false, changes: changeOf(pin.definition, definition), newlyHeld: false };
    return { pinned: false, changes: [], newlyHeld: false, unpinned: 'the gateway, which pins tools, cannot be reached' };
  }

  private remember(server: string, definition: ToolDefinition): void {
    this.pinnedByGateway.set(key(server, definition.name), definitionHash(definition));
  }
}

/** The gateway's answer, each state checked; undefined when it is not the shape sent. */
function statesOf(value: unknown): Map<string, PinState> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const states = new Map<string, PinState>();
  for (const [name, state] of Object.entries(value as Record<string, unknown>)) {
    const { pinned, changes, newlyHeld } = (state ?? {}) as Record<string, unknown>;
    if (typeof pinned !== 'boolean' || typeof newlyHeld !== 'boolean' || !Array.isArray(changes) || !changes.every((change) => typeof change === 'string')) return undefined;
    states.set(name, { pinned, changes: changes as string[], newlyHeld });
  }
  return states;
}

function key(server: string, tool: string): string {
  return `${server}\u0000${tool}`;
}

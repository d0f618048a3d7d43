import type { PinnedDefinition, ToolDefinition } from './tool-definition';

/** Where a listed definition stands against its pin. */
export interface PinState {
  /** True when the definition is the pinned one (a definition seen for the first time is pinned now, unless held as new). */
  pinned: boolean;
  /** What changed, when it is held: `description`, `input schema`, `title`, `annotations`… */
  changes: string[];
  /** True when this check is the first to meet the change (the one that raises the alert). */
  newlyHeld: boolean;
  /** Why a definition nobody pinned yet is held (the sidecar, its gateway away), instead of a change. */
  unpinned?: string;
  /**
   * A definition first met on a server whose other definitions were pinned before: pinned and
   * alerted (MCP_PIN=on), or held until accepted (MCP_PIN=strict), a clone beside a trusted
   * tool being the usual poisoning.
   */
  newcomer?: boolean;
}

/** How a check reads the pins. */
export interface PinCheckOptions {
  /**
   * Reads every pin from its store, not from what this instance remembers: a listing, so that a
   * server that went back to a pinned definition releases a hold another instance recorded.
   */
  fresh?: boolean;
}

/**
 * Pins of what MCP servers list (docs/mcp.md, "Pinning"), an organization's own: the gateway
 * keeps them in PostgreSQL; the sidecar reads them from its bundle. A pin records a definition
 * the first time the organization's agents meet it; a later, different definition holds it until
 * an admin accepts it.
 */
export interface ToolPins {
  /** False when MCP_PIN=off: then a call naming what its server does not list is not refused for it. */
  readonly pinning: boolean;
  /** Checks (and pins, the first time) each definition a server lists, for the organization. */
  check(orgId: string, server: string, definitions: readonly ToolDefinition[], options?: PinCheckOptions): Promise<Map<string, PinState>>;
}

export const TOOL_PINS = Symbol('ToolPins');

/** MCP_PIN=off: every definition reads as pinned. */
export const NO_PINNING: ToolPins = {
  pinning: false,
  check: (_orgId, _server, tools) => Promise.resolve(new Map(tools.map((tool) => [tool.name, { pinned: true, changes: [], newlyHeld: false }]))),
};

export type { PinnedDefinition };

import type { PinnedDefinition, ToolDefinition } from './tool-definition';

/** Where a tool stands against its pin. */
export interface PinState {
  /** True when the definition is the pinned one (a tool seen for the first time is pinned now). */
  pinned: boolean;
  /** What changed, when it is held: `description`, `input schema`. */
  changes: string[];
  /** True when this check is the first to meet the change (the one that raises the alert). */
  newlyHeld: boolean;
  /** Why a tool nobody pinned yet is held (the sidecar, its gateway away), instead of a change. */
  unpinned?: string;
}

/**
 * Pins of MCP tools (docs/mcp.md, "Tool pinning"), an organization's own: the gateway keeps them
 * in PostgreSQL; the sidecar reads them from its bundle. A pin records a tool's definition the
 * first time the organization's agents meet it; a later, different definition holds the tool
 * until an admin accepts it.
 */
export interface ToolPins {
  /** Checks (and pins, the first time) each tool a server lists, for the organization. */
  check(orgId: string, server: string, tools: readonly ToolDefinition[]): Promise<Map<string, PinState>>;
}

export const TOOL_PINS = Symbol('ToolPins');

/** MCP_PIN=off: every definition reads as pinned. */
export const NO_PINNING: ToolPins = {
  check: (_orgId, _server, tools) => Promise.resolve(new Map(tools.map((tool) => [tool.name, { pinned: true, changes: [], newlyHeld: false }]))),
};

export type { PinnedDefinition };

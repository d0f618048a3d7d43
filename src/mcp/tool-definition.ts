import { createHash } from 'node:crypto';

/** What pinning keeps of a tool: what a model reads of it and what it sends it. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: unknown;
}

/** A tool's definition as pinned: the definition and its hash. */
export interface PinnedDefinition {
  hash: string;
  definition: ToolDefinition;
}

/** The definition of a tool as an MCP server lists it (other fields, such as annotations, are not pinned). */
export function toolDefinition(tool: { name: string; description?: string; inputSchema?: unknown }): ToolDefinition {
  return { name: tool.name, description: tool.description ?? '', inputSchema: tool.inputSchema ?? null };
}

/** SHA-256 (hex) of the definition's canonical JSON (keys sorted at every level), so key order never reads as a change. */
export function definitionHash(definition: ToolDefinition): string {
  return createHash('sha256').update(canonicalJson(definition)).digest('hex');
}

/** What changed between a pinned definition and the current one, in words, for a denial's reason and the admin's diff. */
export function changeOf(pinned: ToolDefinition, current: ToolDefinition): string[] {
  const changes: string[] = [];
  if (pinned.description !== current.description) changes.push('description');
  if (canonicalJson(pinned.inputSchema) !== canonicalJson(current.inputSchema)) changes.push('input schema');
  return changes;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

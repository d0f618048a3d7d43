import { createHash } from 'node:crypto';

/**
 * What pinning keeps of something an MCP server lists for the agent's model (docs/mcp.md, "Pinning"):
 * every field the model reads or that shapes what it sends. Tools are pinned under their name,
 * prompts as `prompt:<name>` and resource templates as `template:<name>`. Fields a server leaves
 * out are absent, so a definition of the original three fields hashes as it always did.
 */
export interface ToolDefinition {
  name: string;
  description: string;
  [field: string]: unknown;
}

/** A definition as pinned: the definition and its hash. */
export interface PinnedDefinition {
  hash: string;
  definition: ToolDefinition;
}

/** The fields of a tool the model reads (MCP `Tool`): `icons` and `_meta` are not shown to it. */
const TOOL_FIELDS = ['title', 'outputSchema', 'annotations', 'execution'] as const;
const PROMPT_FIELDS = ['title', 'arguments'] as const;
const TEMPLATE_FIELDS = ['title', 'uriTemplate', 'mimeType', 'annotations'] as const;

/** The pin name of a prompt: apart from tools, whose names carry no colon (MCP tool names are letters, digits, `_`, `-`, `.`). */
export const promptPinName = (name: string): string => `prompt:${name}`;
export const templatePinName = (name: string): string => `template:${name}`;

/** The definition of a tool as an MCP server lists it. */
export function toolDefinition(tool: { name: string; description?: string; inputSchema?: unknown }): ToolDefinition {
  return withFields({ name: tool.name, description: tool.description ?? '', inputSchema: tool.inputSchema ?? null }, tool, TOOL_FIELDS);
}

export function promptDefinition(prompt: { name: string; description?: string }): ToolDefinition {
  return withFields({ name: promptPinName(prompt.name), description: prompt.description ?? '' }, prompt, PROMPT_FIELDS);
}

export function templateDefinition(template: { name: string; description?: string }): ToolDefinition {
  return withFields({ name: templatePinName(template.name), description: template.description ?? '' }, template, TEMPLATE_FIELDS);
}

function withFields(definition: ToolDefinition, listed: object, fields: readonly string[]): ToolDefinition {
  for (const field of fields) {
    const value = (listed as Record<string, unknown>)[field];
    if (value !== undefined) definition[field] = value;
  }
  return definition;
}

/** SHA-256 (hex) of the definition's canonical JSON (keys sorted at every level), so key order never reads as a change. */
export function definitionHash(definition: ToolDefinition): string {
  return createHash('sha256').update(canonicalJson(definition)).digest('hex');
}

/** The size of a definition's canonical JSON, in characters, for the listing bound. */
export function definitionSize(definition: ToolDefinition): number {
  return canonicalJson(definition).length;
}

/** What changed between a pinned definition and the current one, in words, for a denial's reason and the admin's diff. */
export function changeOf(pinned: ToolDefinition, current: ToolDefinition): string[] {
  return changedFields(pinned, current).map(fieldWords);
}

/** The fields that differ, as named in a definition. */
export function changedFields(pinned: ToolDefinition, current: ToolDefinition): string[] {
  const fields = [...new Set([...Object.keys(pinned), ...Object.keys(current)])].filter((field) => field !== 'name');
  return fields.filter((field) => canonicalJson(pinned[field]) !== canonicalJson(current[field]));
}

function fieldWords(field: string): string {
  return field.replace(/[A-Z]/g, (letter) => ` ${letter.toLowerCase()}`);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

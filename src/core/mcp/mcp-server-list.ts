import fs from 'node:fs';
import { parse } from 'yaml';

/** An upstream MCP server the gateway serves at `/mcp/<name>` (MCP_SERVERS, docs/mcp.md). */
export interface McpServerConfig {
  /** Letters, digits, `-` and `_`: the path segment and the decision input's `plugin`. */
  name: string;
  /** Its Streamable HTTP endpoint. */
  url: string;
  /** Headers the gateway adds to every request it sends the server (its credential, say). */
  headers: Readonly<Record<string, string>>;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_FILE_BYTES = 1024 * 1024;

/**
 * The servers of an MCP_SERVERS file: JSON or YAML, either a list of servers or `{servers:
 * [...]}`, each `{name, url, headers?}`. Every problem is reported at once, naming the file and
 * the entry, so a bad file stops the gateway's start.
 */
export function readMcpServers(file: string): McpServerConfig[] {
  let text: string;
  try {
    const stat = fs.statSync(file);
    if (stat.size > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES} bytes`);
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`MCP_SERVERS=${file} cannot be read: ${(error as Error).message}`, { cause: error });
  }
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new Error(`MCP_SERVERS=${file} is neither JSON nor YAML: ${(error as Error).message}`, { cause: error });
  }
  const list = Array.isArray(document) ? document : (document as { servers?: unknown } | null)?.servers;
  if (!Array.isArray(list)) throw new Error(`MCP_SERVERS=${file}: expected a list of servers, or {servers: [...]}`);
  const problems: string[] = [];
  const servers = list.map((entry, index) => serverOf(entry, `MCP_SERVERS=${file}: servers[${index}]`, problems));
  const names = new Set<string>();
  for (const server of servers) {
    if (names.has(server.name)) problems.push(`MCP_SERVERS=${file}: the name ${server.name} is used twice`);
    names.add(server.name);
  }
  if (problems.length > 0) throw new Error(problems.join('; '));
  return servers;
}

function serverOf(entry: unknown, where: string, problems: string[]): McpServerConfig {
  const source = typeof entry === 'object' && entry !== null && !Array.isArray(entry) ? (entry as Record<string, unknown>) : {};
  const name = typeof source.name === 'string' ? source.name : '';
  if (!NAME.test(name)) problems.push(`${where}.name must be 1-64 letters, digits, - or _`);
  const url = typeof source.url === 'string' ? source.url : '';
  if (!/^https?:\/\/[^/]/.test(url)) problems.push(`${where}.url must be an http(s) URL (the server's Streamable HTTP endpoint)`);
  const headers: Record<string, string> = {};
  if (source.headers !== undefined) {
    if (typeof source.headers !== 'object' || source.headers === null || Array.isArray(source.headers)) problems.push(`${where}.headers must be a map of header names to strings`);
    else for (const [key, value] of Object.entries(source.headers)) {
      if (typeof value === 'string') headers[key.toLowerCase()] = value;
      else problems.push(`${where}.headers.${key} must be a string`);
    }
  }
  for (const key of Object.keys(source)) if (!['name', 'url', 'headers'].includes(key)) problems.push(`${where}: unknown field ${key}`);
  return { name, url, headers };
}

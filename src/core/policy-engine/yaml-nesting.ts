import { CST, Lexer } from 'yaml';

/** How deep a policy source may nest; a policies file needs about a dozen levels. */
export const MAX_NESTING = 64;

// Markers the lexer puts before documents and scalars: they are not text of the source.
const MARKERS: ReadonlySet<string> = new Set([CST.DOCUMENT, CST.FLOW_END, CST.SCALAR]);
const BLOCK_INDICATORS: ReadonlySet<string> = new Set(['-', '?', ':']);

/**
 * Offset of the first token nested deeper than MAX_NESTING, or -1. yaml builds its whole syntax
 * tree before it finds a document too deep for its recursive composer: 1 MiB of `{` held the
 * gateway for 1.5 s and 600 MB, and ended in "Maximum call stack size exceeded". This counts
 * depth on the lexer's tokens, which take a fifth of that time and no memory: open flow
 * collections, plus block levels told by indentation, plus indicators sharing a line (`- - -`).
 * It over-counts a little (a `key:` and its value are two levels), never under.
 */
export function tooDeepOffset(source: string): number {
  const indents: number[] = [];
  let flow = 0;
  let onLine = 0;
  let offset = 0;
  for (const token of new Lexer().lex(source)) {
    if (MARKERS.has(token)) continue;
    if (flow === 0 && startsLine(source, offset)) onLine = enterLine(source, offset, indents, onLine);
    if (token === '[' || token === '{') flow += 1;
    else if (token === ']' || token === '}') flow = Math.max(0, flow - 1);
    else if (flow === 0 && BLOCK_INDICATORS.has(token)) onLine += 1;
    if (flow + indents.length + onLine > MAX_NESTING) return offset;
    offset += token.length;
  }
  return -1;
}

function startsLine(source: string, offset: number): boolean {
  return offset === 0 || source.charCodeAt(offset - 1) === 10;
}

/** Keeps the indents of the open block levels; returns the indicator count the line starts with. */
function enterLine(source: string, offset: number, indents: number[], onLine: number): number {
  let indent = 0;
  while (source.charCodeAt(offset + indent) === 32) indent += 1;
  const first = source[offset + indent];
  if (first === undefined || first === '\n' || first === '\r' || first === '#') return onLine; // blank or comment
  while (indents.length > 0 && indents[indents.length - 1] >= indent) indents.pop();
  indents.push(indent);
  return 0;
}

import { Document, isAlias, isMap, isPair, isScalar, isSeq, LineCounter, Node, Pair, YAMLMap } from 'yaml';
import type { SourceLocator, SourcePath } from './policy-validator';
import { scalarSourceOffset } from './yaml-scalar-offsets';

/** Positions values of a parsed YAML document: the node at a path, its key, or a character inside a string. */
export class YamlLocator implements SourceLocator {
  // Every unknown key of a mapping is located through it: finding each by a scan of the
  // mapping made a body of many unknown keys quadratic (20,000 keys: a minute of blocked CPU).
  private readonly keyIndexes = new WeakMap<YAMLMap, Map<string, Pair>>();

  constructor(
    private readonly source: string,
    private readonly document: Document,
    private readonly lineCounter: LineCounter,
  ) {}

  locate(path: SourcePath, where?: { key?: boolean; inner?: number }): { line: number; column: number } {
    const { line, col } = this.lineCounter.linePos(this.offset(path, where));
    return { line, column: col };
  }

  private offset(path: SourcePath, where?: { key?: boolean; inner?: number }): number {
    const found = this.walk(path);
    if (where?.key === true && found.pair !== undefined && found.complete) {
      return rangeStart(found.pair.key) ?? found.offset;
    }
    if (where?.inner !== undefined && found.complete && isScalar(found.node)) {
      return scalarSourceOffset(this.source, found.node, where.inner);
    }
    return found.offset;
  }

  /** Follows the path as far as it exists; `offset` is where the deepest node found starts. */
  private walk(path: SourcePath): { node: unknown; pair?: Pair; offset: number; complete: boolean } {
    let node: unknown = this.document.contents;
    let offset = rangeStart(node) ?? 0;
    let pair: Pair | undefined;
    for (const segment of path) {
      if (isAlias(node)) node = node.resolve(this.document);
      const next = this.childOf(node, segment);
      if (next === undefined) return { node, pair, offset, complete: false };
      pair = next.pair;
      node = next.node;
      offset = rangeStart(node) ?? rangeStart(pair?.key) ?? offset;
    }
    return { node, pair, offset, complete: true };
  }

  private childOf(node: unknown, segment: string | number): { node: unknown; pair?: Pair } | undefined {
    if (isMap(node)) {
      const pair = this.keyIndex(node).get(String(segment));
      return pair === undefined ? undefined : { node: pair.value, pair };
    }
    if (isSeq(node) && typeof segment === 'number') {
      return segment < node.items.length ? { node: node.items[segment] } : undefined;
    }
    return undefined;
  }

  /** The mapping's pairs by key text; the first pair wins, as a scan would find it. */
  private keyIndex(map: YAMLMap): Map<string, Pair> {
    let index = this.keyIndexes.get(map);
    if (index === undefined) {
      index = new Map();
      for (const item of map.items) {
        const key = isPair(item) ? keyText(item.key) : undefined;
        if (key !== undefined && !index.has(key)) index.set(key, item);
      }
      this.keyIndexes.set(map, index);
    }
    return index;
  }
}

/** A mapping key as the text it becomes in the loaded value (`1` and `"1"` alike); undefined for a non-scalar key. */
export function keyText(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  return typeof key === 'string' ? key : undefined;
}

function rangeStart(node: unknown): number | undefined {
  if (typeof node !== 'object' || node === null || !('range' in node)) return undefined;
  const range = (node as Node).range;
  return range === null || range === undefined ? undefined : range[0];
}

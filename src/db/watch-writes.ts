import {
  AliasNode,
  ColumnNode,
  type KyselyPlugin,
  type OperationNode,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  TableNode,
  type UnknownRow,
} from 'kysely';

/**
 * Tables whose writes matter to a cache. For updates, only the columns named count (a token's
 * `last_used_at` changes nothing an access check reads); `null` means any update does.
 */
export type WatchedTables = Readonly<Record<string, readonly string[] | null>>;

/**
 * A Kysely plugin for a cache that is cleared by writes: `clear` runs when a query that writes a
 * watched table is built, and again once it has run, because a read that raced the write may have
 * cached the old answer meanwhile.
 */
export function clearOnWrite(watched: WatchedTables, clear: () => void): KyselyPlugin {
  const writes = new WeakSet<object>();
  return {
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      if (writesTo(args.node, watched)) {
        writes.add(args.queryId);
        clear();
      }
      return args.node;
    },
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      if (writes.has(args.queryId)) clear();
      return args.result;
    },
  };
}

/** Whether a query writes something `watched` names. */
export function writesTo(node: RootOperationNode, watched: WatchedTables): boolean {
  switch (node.kind) {
    case 'InsertQueryNode':
      return tableName(node.into) in watched;
    case 'DeleteQueryNode':
      return node.from.froms.some((f) => tableName(f) in watched);
    case 'UpdateQueryNode': {
      const name = node.table ? tableName(node.table) : '';
      if (!(name in watched)) return false;
      const columns = watched[name];
      if (columns === null || columns === undefined) return true;
      return (node.updates ?? []).some((u) => columns.includes(columnName(u.column)));
    }
    default:
      return false;
  }
}

function tableName(node: OperationNode | undefined): string {
  if (node && TableNode.is(node)) return node.table.identifier.name;
  if (node && AliasNode.is(node)) return tableName(node.node);
  return '';
}

function columnName(node: OperationNode): string {
  return ColumnNode.is(node) ? node.column.name : '';
}

/** Answers kept by a cache that writes clear (`clearOnWrite`): see `keptAnswers`. */
export interface KeptAnswers {
  /** The answer kept for `key`, or `load`'s (kept unless the store was cleared while it ran). */
  get<T>(key: string, load: () => Promise<T>): Promise<T>;
  clear(): void;
  size(): number;
}

/**
 * Answers kept for at most `ttlMs` (by `clock`) and dropped by `clear`, which a cache's `clearOnWrite`
 * plugin calls after the writes that matter to it. A read that began before a clear does not keep its
 * answer (a generation count), so a write is never shadowed by a read that raced it. A full store
 * starts again empty: a bound on memory, not an LRU.
 */
export function keptAnswers(ttlMs: number, clock: () => number, maxEntries: number): KeptAnswers {
  const entries = new Map<string, { value: unknown; until: number }>();
  let generation = 0;
  return {
    async get<T>(key: string, load: () => Promise<T>): Promise<T> {
      const hit = entries.get(key);
      if (hit && hit.until > clock()) return hit.value as T;
      const seen = generation;
      const value = await load();
      if (seen === generation) {
        if (entries.size >= maxEntries) entries.clear();
        entries.set(key, { value, until: clock() + ttlMs });
      }
      return value;
    },
    clear() {
      generation++;
      entries.clear();
    },
    size: () => entries.size,
  };
}

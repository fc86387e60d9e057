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

/** Runs `fn` once after `ms` without keeping the process alive. */
export type Schedule = (fn: () => void, ms: number) => void;
const unrefTimer: Schedule = (fn, ms) => void setTimeout(fn, ms).unref();

/** Answers kept by a cache that writes clear (`clearOnWrite`): see `keptAnswers`. */
export interface KeptAnswers {
  /**
   * The answer kept for `key`, or `load`'s (kept unless the store was cleared while it ran; a load
   * that throws keeps nothing). With `renew`, an answer past half its time is still answered, and
   * `renew` reads it again in the background (once at a time), so that a key in use does not make a
   * caller wait for its read every `ttlMs`. `renew` must not depend on the caller's transaction.
   */
  get<T>(key: string, load: () => Promise<T>, renew?: () => Promise<T>): Promise<T>;
  clear(): void;
  /** Entries held (expired ones until they are swept). */
  size(): number;
}

interface Kept {
  value: unknown;
  until: number;
  renewing: boolean;
}

/**
 * Answers kept for at most `ttlMs` (by `clock`) and dropped by `clear`, which a cache's `clearOnWrite`
 * plugin calls after the writes that matter to it. A read that began before a clear does not keep its
 * answer (a generation count), so a write is never shadowed by a read that raced it. A full store
 * starts again empty: a bound on memory, not an LRU. Expired entries are swept at most once per
 * `ttlMs` when entries are kept, and by a timer `ttlMs` after the last one, so that keys seen once
 * (thousands of daemons opening their tunnels, then idle) are not kept.
 */
export function keptAnswers(
  ttlMs: number,
  clock: () => number,
  maxEntries: number,
  schedule: Schedule = unrefTimer,
): KeptAnswers {
  const entries = new Map<string, Kept>();
  let generation = 0;

  let sweepAt = 0;
  let sweepScheduled = false;
  function sweep(now: number): void {
    sweepAt = now + ttlMs;
    for (const [k, kept] of entries) if (kept.until <= now) entries.delete(k);
  }
  function sweepLater(): void {
    if (sweepScheduled) return;
    sweepScheduled = true;
    schedule(() => {
      sweepScheduled = false;
      sweep(clock());
      if (entries.size > 0) sweepLater();
    }, ttlMs);
  }
  function keep(key: string, value: unknown, seen: number): void {
    if (seen !== generation) return;
    const now = clock();
    if (now >= sweepAt) sweep(now);
    if (entries.size >= maxEntries) entries.clear();
    entries.set(key, { value, until: now + ttlMs, renewing: false });
    sweepLater();
  }
  // The read starts after the turn of the caller that asked, which it would otherwise delay: on
  // SQLite it would take the connection, when the caller's transaction let go of it, before the
  // caller went on.
  function renewLater(key: string, kept: Kept, renew: () => Promise<unknown>): void {
    kept.renewing = true;
    const seen = generation;
    setImmediate(() =>
      renew().then(
        (value) => keep(key, value, seen),
        // The next caller reads it, and meets the error itself if it persists.
        () => {
          if (entries.get(key) === kept) entries.delete(key);
        },
      ),
    );
  }

  return {
    async get<T>(key: string, load: () => Promise<T>, renew?: () => Promise<T>): Promise<T> {
      const kept = entries.get(key);
      if (kept) {
        const left = kept.until - clock();
        if (left > 0) {
          if (renew && !kept.renewing && left <= ttlMs / 2) renewLater(key, kept, renew);
          return kept.value as T;
        }
      }
      const seen = generation;
      const value = await load();
      keep(key, value, seen);
      return value;
    },
    clear() {
      generation++;
      entries.clear();
    },
    size: () => entries.size,
  };
}

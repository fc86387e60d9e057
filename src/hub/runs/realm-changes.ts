/**
 * A realm stream's cursor over the realm's history (src/hub/runs/runs.stream.ts): which entries a look
 * has not sent yet, and where a look must read to find them.
 *
 * A change's notice names the first history entry its transaction wrote for a run (src/hub/cluster/bus.ts
 * `runFeed`), so a look made for notices reads only when one names an entry not read yet, and knows
 * where that entry is. On SQLite transactions commit one at a time, in the order of their ids: a look
 * reads after the last entry sent. On PostgreSQL they commit in any order, so an entry can become
 * visible after one with a later id was read. A look for entries newer than every entry read reads past
 * the newest (`readNew`, with their runs); a look for an entry below it (a late commit) reads the last
 * `settleMs` again, skipping what was sent. So does a look that no notice named (the stream's first,
 * its poll, a notice of a hub that names no entry), and a look at least every RESCAN_MS while entries
 * keep coming: it finds an entry whose notice was lost, and makes the entries older than the window
 * final. An entry committed more than `settleMs` after its id was made could still be missed; the
 * hub's transactions take milliseconds.
 */

/** How long after its id is made an entry may still commit, on PostgreSQL. */
export const SETTLE_MS = 1_000;
/** The window is read again at least this often while newer entries keep coming. */
export const RESCAN_MS = 1_000;
/** Entries read per statement. */
const PAGE = 500;
/** Pages read at most per look at the window. */
const PAGES = 10;

export interface Change<R = unknown> {
  id: string;
  run_id: string;
  /** The run as `readNew` read it with the entry (reads of the window give none). */
  run?: R | undefined;
}

export interface RealmChangesOptions<R> {
  /** The realm's entries after `after`, oldest first, at most `limit`. */
  read(after: string, limit: number): Promise<Change<R>[]>;
  /**
   * The same, with each entry's run: used for the reads past every entry seen, which are all new and
   * few, while the window's reads again (mostly entries already sent) use `read`.
   */
  readNew(after: string, limit: number): Promise<Change<R>[]>;
  now(): number;
  /** 0 where transactions commit in the order of their ids (SQLite). */
  settleMs: number;
  /** Entries after this id are sent. */
  from: string;
}

export interface RealmChanges<R> {
  /**
   * The entries not sent yet. `named`: the entries the notices since the last look named (it reads
   * nothing when each was read already); undefined: a look no notice asked for, which reads wherever
   * an entry may be.
   */
  next(named?: readonly string[]): Promise<Change<R>[]>;
  /** Whether the entry was read already (a notice that names it needs no look). */
  seen(id: string): boolean;
  /** After a look that stopped at its limit: look again within this long (else null). */
  lookAgainInMs(): number | null;
}

export function realmChanges<R>(o: RealmChangesOptions<R>): RealmChanges<R> {
  /** Entries up to here are final: sent, and no other will commit below it. */
  let floor = o.from;
  /** The newest entry read. */
  let top = o.from;
  /** When the window above `floor` was last read again. */
  let rescanned = Number.NEGATIVE_INFINITY;
  /** The last look stopped at its limit: there is more to read. */
  let more = false;
  const sent = new Set<string>();
  /** Entries after `after`, at most `pages` pages; `whole` when the last page was not full. */
  const read = async (after: string, pages: number, reader = o.read) => {
    const rows: Change<R>[] = [];
    for (let page = 0, at = after; page < pages; page++) {
      const got = await reader(at, PAGE);
      rows.push(...got);
      if (got.length < PAGE) return { rows, whole: true };
      at = got.at(-1)!.id;
    }
    return { rows, whole: false };
  };
  const seen = (id: string) => id <= floor || sent.has(id);
  return {
    seen,
    lookAgainInMs: () => (more ? 0 : null),
    async next(named) {
      if (named && !named.some((id) => !seen(id))) return [];
      if (!o.settleMs) {
        const { rows, whole } = await read(floor, 1, o.readNew);
        more = !whole;
        if (rows.length) floor = rows.at(-1)!.id;
        return rows;
      }
      const now = o.now();
      const past =
        named !== undefined && now - rescanned < RESCAN_MS && named.every((id) => seen(id) || id > top);
      const got = past ? await read(top > floor ? top : floor, PAGES, o.readNew) : await read(floor, PAGES);
      more = !got.whole;
      if (!past) rescanned = now;
      const fresh = got.rows.filter((r) => !sent.has(r.id));
      for (const r of fresh) sent.add(r.id);
      const last = got.rows.at(-1)?.id;
      if (last !== undefined && last > top) top = last;
      // After a whole look at the window, entries older than it are final: read no more of them.
      const horizon = idAt(now - o.settleMs);
      if (!past && got.whole && horizon > floor) {
        floor = horizon;
        for (const id of sent) if (id <= floor) sent.delete(id);
      }
      return fresh;
    },
  };
}

/** The smallest UUID v7 of the millisecond `ms`: ids made before it sort lower. */
export function idAt(ms: number): string {
  const h = Math.max(0, ms).toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-0000-0000-000000000000`;
}

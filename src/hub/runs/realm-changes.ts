/**
 * A realm stream's cursor over the realm's history (src/hub/runs/runs.stream.ts): which entries a wake
 * has not sent yet. On SQLite transactions commit one at a time, in the order of their ids. On
 * PostgreSQL they commit in any order, so an entry can become visible after one with a later id was
 * read: a read starts after the newest entry seen, and the last `settleMs` are read again (skipping
 * what was sent) when a wake finds nothing newer (a late commit woke it) and at least every
 * RESCAN_MS. A busy realm's wakes so read what is new, not the whole window each time; a late entry
 * whose wake was taken together with a newer one's waits for the next look, which the stream makes
 * within RESCAN_MS after a look that did not read the window (`lookAgainInMs`), even on a realm gone
 * quiet. An entry committed more than `settleMs` after its id was made could still be missed; the
 * hub's transactions take milliseconds.
 */

/** How long after its id is made an entry may still commit, on PostgreSQL. */
export const SETTLE_MS = 1_000;
/** The window is read again at least this often while newer entries keep coming. */
export const RESCAN_MS = 100;
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

export function realmChanges<R>(o: RealmChangesOptions<R>): {
  next(): Promise<Change<R>[]>;
  /** After a look that read only past the newest entry: look again within this long (else null). */
  lookAgainInMs(): number | null;
} {
  /** Entries up to here are final: sent, and no other will commit below it. */
  let floor = o.from;
  /** The newest entry read. */
  let top = o.from;
  /** When the window above `floor` was last read again. */
  let rescanned = Number.NEGATIVE_INFINITY;
  /** The last look read only past the newest entry: a late entry below it may be there unread. */
  let partial = false;
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
  return {
    lookAgainInMs: () => (partial ? RESCAN_MS : null),
    async next() {
      if (!o.settleMs) {
        const { rows } = await read(floor, 1, o.readNew);
        if (rows.length) floor = rows.at(-1)!.id;
        return rows;
      }
      const now = o.now();
      const rescan = now - rescanned >= RESCAN_MS;
      const past = rescan ? null : await read(top > floor ? top : floor, PAGES, o.readNew);
      partial = past !== null && past.rows.length > 0;
      const got = partial ? past! : await read(floor, PAGES);
      if (!partial) rescanned = now;
      const whole = !partial && got.whole;
      const fresh = got.rows.filter((r) => !sent.has(r.id));
      for (const r of fresh) sent.add(r.id);
      const last = got.rows.at(-1)?.id;
      if (last !== undefined && last > top) top = last;
      // After a whole look at the window, entries older than it are final: read no more of them.
      const horizon = idAt(now - o.settleMs);
      if (whole && horizon > floor) {
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

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Change, idAt, RESCAN_MS, realmChanges, SETTLE_MS } from './realm-changes.js';

/** An entry id made at `ms`, the `n`th of that millisecond (ids sort as UUID v7s do). */
const idOf = (ms: number, n = 1) => `${idAt(ms).slice(0, 24)}${n.toString(16).padStart(12, '0')}`;

/**
 * A realm's committed entries, in a list a test adds to in any order, the readers a cursor is given,
 * and the reads made of it with the reader each used: `readNew` (entries with their runs) or `read`.
 */
function realm() {
  const committed: Change<string>[] = [];
  const reads: string[] = [];
  const kinds: ('new' | 'window')[] = [];
  const after = (id: string, limit: number) => committed.filter((c) => c.id > id).slice(0, limit);
  return {
    reads,
    kinds,
    commit(id: string, run = 'r') {
      committed.push({ id, run_id: run });
      committed.sort((a, b) => (a.id < b.id ? -1 : 1));
    },
    readers: {
      async read(id: string, limit: number) {
        reads.push(id);
        kinds.push('window');
        return after(id, limit);
      },
      async readNew(id: string, limit: number) {
        reads.push(id);
        kinds.push('new');
        return after(id, limit).map((c) => ({ ...c, run: `row of ${c.run_id}` }));
      },
    },
  };
}

const ids = (xs: Change<string>[]) => xs.map((x) => x.id);

describe('a realm stream’s cursor', () => {
  it('where transactions commit in order (SQLite): each look reads after the last entry sent', async () => {
    const r = realm();
    const c = realmChanges({ ...r.readers, now: () => 1_000, settleMs: 0, from: idOf(0) });
    r.commit(idOf(10));
    r.commit(idOf(20));
    assert.deepEqual(ids(await c.next()), [idOf(10), idOf(20)]);
    r.commit(idOf(30));
    const sent = await c.next();
    assert.deepEqual(ids(sent), [idOf(30)]);
    assert.equal(sent[0]!.run, 'row of r', 'each entry comes with its run, read with it');
    assert.deepEqual(r.reads, [idOf(0), idOf(20)]);
    assert.deepEqual(r.kinds, ['new', 'new']);
  });

  it('where transactions commit in order (SQLite): a notice of an entry read already reads nothing', async () => {
    const r = realm();
    const c = realmChanges({ ...r.readers, now: () => 1_000, settleMs: 0, from: idOf(0) });
    r.commit(idOf(10));
    r.commit(idOf(20));
    assert.deepEqual(ids(await c.next([idOf(10)])), [idOf(10), idOf(20)]);
    assert.equal(c.seen(idOf(20)), true);
    assert.deepEqual(ids(await c.next([idOf(20)])), [], 'the notice of the second entry came after its read');
    assert.deepEqual(r.reads, [idOf(0)], 'and made none');
  });

  it('on PostgreSQL a notice of a newer entry reads past the newest entry seen, one read already nothing', async () => {
    const r = realm();
    let now = 10_000;
    const c = realmChanges({ ...r.readers, now: () => now, settleMs: SETTLE_MS, from: idOf(9_000) });
    r.commit(idOf(9_500));
    assert.deepEqual(ids(await c.next()), [idOf(9_500)], 'the first look reads the window');
    const start = r.reads.length;
    for (let i = 1; i <= 5; i++) {
      now += 10;
      r.commit(idOf(9_500 + i));
      assert.deepEqual(ids(await c.next([idOf(9_500 + i)])), [idOf(9_500 + i)], 'each new entry once');
      assert.deepEqual(ids(await c.next([idOf(9_500 + i)])), [], 'a second notice of it reads nothing');
    }
    assert.deepEqual(
      r.reads.slice(start),
      [1, 2, 3, 4, 5].map((i) => idOf(9_500 + i - 1)),
      'no look read the window while newer entries came, and none read for an entry seen',
    );
    assert.ok(
      r.kinds.slice(start).every((k) => k === 'new'),
      'reads past the newest entry read the runs with their entries',
    );
    now += RESCAN_MS;
    r.commit(idOf(9_600));
    const again = await c.next([idOf(9_600)]);
    assert.deepEqual(ids(again), [idOf(9_600)]);
    assert.equal(
      r.reads.at(-1),
      idOf(9_000),
      'the window again every RESCAN_MS, from where entries are final',
    );
    assert.equal(r.kinds.at(-1), 'window', 'a look at the window reads entries alone');
    assert.equal(again[0]!.run, undefined, 'its new entries come without their runs');
  });

  it('an entry that commits after a newer one was sent is sent once, by a look at the window its notice asks for', async () => {
    const r = realm();
    let now = 20_000;
    const c = realmChanges({ ...r.readers, now: () => now, settleMs: SETTLE_MS, from: idOf(19_000) });
    r.commit(idOf(19_990, 2));
    assert.deepEqual(ids(await c.next([idOf(19_990, 2)])), [idOf(19_990, 2)]);
    now += 5;
    // Its id was made before the one sent, its transaction committed after.
    r.commit(idOf(19_990, 1));
    assert.equal(c.seen(idOf(19_990, 1)), false);
    assert.deepEqual(ids(await c.next([idOf(19_990, 1)])), [idOf(19_990, 1)]);
    assert.equal(r.kinds.at(-1), 'window');
    now += 5;
    assert.deepEqual(ids(await c.next([idOf(19_990, 1)])), [], 'never twice');
    assert.deepEqual(ids(await c.next()), [], 'not even by a look no notice asked for');
  });

  it('a late entry and a newer one named together are both sent by one look', async () => {
    const r = realm();
    let now = 40_000;
    const c = realmChanges({ ...r.readers, now: () => now, settleMs: SETTLE_MS, from: idOf(39_000) });
    r.commit(idOf(39_990, 3));
    assert.deepEqual(ids(await c.next([idOf(39_990, 3)])), [idOf(39_990, 3)]);
    now += 5;
    // Two commit together: one with an id below the newest sent (late), one above it.
    r.commit(idOf(39_990, 1));
    r.commit(idOf(39_995));
    assert.deepEqual(ids(await c.next([idOf(39_995), idOf(39_990, 1)])), [idOf(39_990, 1), idOf(39_995)]);
    assert.equal(c.lookAgainInMs(), null, 'nothing is left behind');
  });

  it('a look that stops at its limit asks for another at once', async () => {
    const r = realm();
    const now = 50_000;
    const c = realmChanges({ ...r.readers, now: () => now, settleMs: 0, from: idOf(49_000) });
    for (let i = 1; i <= 501; i++) r.commit(idOf(49_000 + i));
    assert.equal((await c.next([idOf(49_001)])).length, 500);
    assert.equal(c.lookAgainInMs(), 0);
    assert.deepEqual(ids(await c.next()), [idOf(49_501)]);
    assert.equal(c.lookAgainInMs(), null);
  });

  it('entries older than the window become final: later looks start above them', async () => {
    const r = realm();
    let now = 30_000;
    const c = realmChanges({ ...r.readers, now: () => now, settleMs: SETTLE_MS, from: idOf(29_000) });
    r.commit(idOf(29_500));
    assert.deepEqual(ids(await c.next()), [idOf(29_500)]);
    now += SETTLE_MS + RESCAN_MS;
    assert.deepEqual(ids(await c.next()), []);
    assert.equal(r.reads.at(-1), idOf(29_000));
    now += RESCAN_MS;
    assert.deepEqual(ids(await c.next()), []);
    assert.equal(r.reads.at(-1), idAt(30_000 + RESCAN_MS), 'the window starts where entries were final');
  });
});

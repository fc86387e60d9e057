import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keptAnswers, type Schedule } from './watch-writes.js';

/**
 * A load that answers `values` in turn and counts its calls; after `hold()`, its answers wait until
 * the function `hold` returned is called.
 */
function loader<T>(...values: T[]) {
  const state = { calls: 0, gate: null as Promise<void> | null };
  const load = async (): Promise<T> => {
    const value = values[Math.min(state.calls, values.length - 1)]!;
    state.calls++;
    if (state.gate) await state.gate;
    return value;
  };
  const hold = (): (() => void) => {
    let open!: () => void;
    state.gate = new Promise((resolve) => {
      open = resolve;
    });
    return () => {
      state.gate = null;
      open();
    };
  };
  return Object.assign(state, { load, hold });
}

/** A store of answers kept for 1,000 ms by a clock the test moves (`t.now`); timers go to `schedule`. */
function store(maxEntries = 100, schedule: Schedule = () => {}) {
  const t = { now: 0 };
  return Object.assign(t, { kept: keptAnswers(1_000, () => t.now, maxEntries, schedule) });
}

/** Lets pending promise callbacks run (the background read resolves through a few of them). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('kept answers', () => {
  it('answers what it kept until the time to live is over, then reads again', async () => {
    const t = store();
    const { kept } = t;
    const l = loader('a', 'b');
    assert.equal(await kept.get('k', l.load), 'a');
    t.now += 999;
    assert.equal(await kept.get('k', l.load), 'a');
    assert.equal(l.calls, 1, 'without renew, nothing is read before the end');
    t.now += 1;
    assert.equal(await kept.get('k', l.load), 'b');
    assert.equal(l.calls, 2);
  });

  it('renews an answer asked for past half its time in the background, once at a time', async () => {
    const t = store();
    const { kept } = t;
    const l = loader('a', 'b', 'c');
    assert.equal(await kept.get('k', l.load, l.load), 'a');
    t.now = 499;
    assert.equal(await kept.get('k', l.load, l.load), 'a');
    assert.equal(l.calls, 1, 'not renewed in its first half');
    t.now = 500;
    const open = l.hold();
    assert.equal(await kept.get('k', l.load, l.load), 'a', 'answered at once while it is read again');
    assert.equal(l.calls, 1, "the read starts after the caller's turn");
    await settle();
    assert.equal(await kept.get('k', l.load, l.load), 'a');
    await settle();
    assert.equal(l.calls, 2, 'one renewal at a time');
    open();
    await settle();
    // Renewed at 500: kept until 1,500, where the first answer would have ended at 1,000.
    t.now = 1_400;
    assert.equal(await kept.get('k', l.load, l.load), 'b');
    await settle();
    assert.equal(l.calls, 3, 'renewed again past half of its new time');
  });

  it('drops an answer whose renewal fails, so the next caller meets the error', async () => {
    const t = store();
    const { kept } = t;
    assert.equal(await kept.get('k', async () => 'a'), 'a');
    t.now = 600;
    const failing = async (): Promise<string> => {
      throw new Error('revoked');
    };
    assert.equal(await kept.get('k', failing, failing), 'a');
    await settle();
    assert.equal(kept.size(), 0);
    await assert.rejects(kept.get('k', failing, failing), /revoked/);
    assert.equal(kept.size(), 0, 'a load that throws keeps nothing');
  });

  it('keeps no answer read before a clear, first read or renewal', async () => {
    const t = store();
    const { kept } = t;
    const first = kept.get('k', async () => 'old');
    kept.clear();
    assert.equal(await first, 'old');
    assert.equal(kept.size(), 0);
    assert.equal(await kept.get('k', async () => 'a'), 'a');
    t.now = 600;
    const l = loader('stale');
    const open = l.hold();
    assert.equal(await kept.get('k', l.load, l.load), 'a');
    kept.clear();
    open();
    await settle();
    assert.equal(kept.size(), 0, 'the renewal that raced the clear is not kept');
  });

  it('sweeps expired entries when others are kept and by a timer after the last one', async () => {
    const timers: (() => void)[] = [];
    const t = store(100, (fn) => timers.push(fn));
    const { kept } = t;
    for (let i = 0; i < 50; i++) await kept.get(`seen-once-${i}`, async () => i);
    assert.equal(timers.length, 1, 'one timer for many entries');
    t.now = 500;
    await kept.get('later', async () => 'x');
    timers.shift()!();
    assert.equal(kept.size(), 51, 'nothing had expired yet');
    assert.equal(timers.length, 1, 'swept again while entries are left');
    t.now = 1_000;
    timers.shift()!();
    assert.equal(kept.size(), 1, 'the first fifty expired');
    t.now = 1_500;
    timers.shift()!();
    assert.equal(kept.size(), 0);
    assert.equal(timers.length, 0, 'no timer once the store is empty');
    // Keeping an entry sweeps the expired ones too.
    for (let i = 0; i < 10; i++) await kept.get(`again-${i}`, async () => i);
    t.now = 2_600;
    await kept.get('fresh', async () => 'y');
    assert.equal(kept.size(), 1);
  });

  it('starts again empty when full', async () => {
    const { kept } = store(3);
    for (const k of ['a', 'b', 'c', 'd']) await kept.get(k, async () => k);
    assert.equal(kept.size(), 1);
  });
});

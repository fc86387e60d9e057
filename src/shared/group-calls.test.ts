import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupCalls, groupCallsPer } from './group-calls.js';

/** A `run` that records its groups; it waits for `release()` before answering each group. */
function recorder(fail: (item: number) => boolean = () => false) {
  const groups: number[][] = [];
  let release: () => void = () => {};
  const run = async (items: number[]) => {
    groups.push(items);
    await new Promise<void>((r) => {
      release = r;
    });
    if (items.some(fail)) throw new Error(`cannot do ${items.filter(fail).join(',')}`);
    return items.map((i) => i * 10);
  };
  return { groups, run, release: () => release() };
}

/** Waits until `cond` holds, turn by turn of the event loop. */
async function turnsUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setImmediate(r));
  assert.ok(cond(), 'condition never held');
}

describe('groupCalls', () => {
  it('runs a lone call at the end of its turn, alone', async () => {
    const r = recorder();
    const call = groupCalls(r.run, 10);
    const out = call(1);
    assert.deepEqual(r.groups, [], 'not before the turn ends');
    await turnsUntil(() => r.groups.length === 1);
    r.release();
    assert.equal(await out, 10);
    assert.deepEqual(r.groups, [[1]]);
  });

  it('groups the calls of one turn, and those made while a group runs, in order', async () => {
    const r = recorder();
    const call = groupCalls(r.run, 10);
    const first = [call(1), call(2), call(3)];
    await turnsUntil(() => r.groups.length === 1);
    const second = [call(4), call(5)];
    r.release();
    assert.deepEqual(await Promise.all(first), [10, 20, 30]);
    await turnsUntil(() => r.groups.length === 2);
    r.release();
    assert.deepEqual(await Promise.all(second), [40, 50]);
    assert.deepEqual(r.groups, [
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('with windowMs, groups the calls of every turn until the window closes', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const r = recorder();
    const call = groupCalls(r.run, 10, { windowMs: 20 });
    const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
    const out = [call(1)];
    await nextTurn();
    out.push(call(2));
    await nextTurn();
    t.mock.timers.tick(19);
    out.push(call(3));
    await nextTurn();
    assert.deepEqual(r.groups, [], 'not before the window closes');
    t.mock.timers.tick(1);
    await turnsUntil(() => r.groups.length === 1);
    r.release();
    assert.deepEqual(await Promise.all(out), [10, 20, 30]);
    assert.deepEqual(r.groups, [[1, 2, 3]]);
  });

  it('with idleMs, a call after a quiet spell runs before the rest of its turn; a call soon after a group waits for the turn to end', async () => {
    const r = recorder();
    // Nothing ran before the first call (a quiet spell however long); the calls after it come within
    // the minute of the group before.
    const call = groupCalls(r.run, 10, { idleMs: 60_000 });
    let turnEnded = false;
    setImmediate(() => {
      turnEnded = true;
    });
    const first = call(1);
    await Promise.resolve();
    assert.deepEqual(r.groups, [[1]], 'started once the calling code had run');
    assert.equal(turnEnded, false);
    r.release();
    assert.equal(await first, 10);
    await new Promise((resolve) => setImmediate(resolve));
    const next = [call(2), call(3)];
    await Promise.resolve();
    assert.deepEqual(r.groups, [[1]], 'not before the turn ends');
    await turnsUntil(() => r.groups.length === 2);
    r.release();
    assert.deepEqual(await Promise.all(next), [20, 30]);
    assert.deepEqual(r.groups, [[1], [2, 3]]);
  });

  it('with idleMs 0, every call that finds no group running starts one at once, with the calls made before it starts', async () => {
    const r = recorder();
    const call = groupCalls(r.run, 10, { idleMs: 0 });
    for (const items of [[1], [2, 3]]) {
      await new Promise((resolve) => setImmediate(resolve));
      const out = items.map((i) => call(i));
      await Promise.resolve();
      assert.deepEqual(r.groups.at(-1), items);
      r.release();
      assert.deepEqual(
        await Promise.all(out),
        items.map((i) => i * 10),
      );
    }
  });

  it('takes at most maxGroup items at once', async () => {
    const r = recorder();
    const call = groupCalls(r.run, 2);
    const all = [call(1), call(2), call(3)];
    await turnsUntil(() => r.groups.length === 1);
    r.release();
    await turnsUntil(() => r.groups.length === 2);
    r.release();
    assert.deepEqual(await Promise.all(all), [10, 20, 30]);
    assert.deepEqual(r.groups, [[1, 2], [3]]);
  });

  it('runs a failed group again item by item: only the bad item fails', async () => {
    const r = recorder((i) => i === 2);
    const call = groupCalls(r.run, 10);
    const all = [call(1), call(2), call(3)].map((p) => p.then(String, (e: Error) => e.message));
    for (let n = 1; n <= 4; n++) {
      await turnsUntil(() => r.groups.length === n);
      r.release();
    }
    assert.deepEqual(await Promise.all(all), ['10', 'cannot do 2', '30']);
    assert.deepEqual(r.groups, [[1, 2, 3], [1], [2], [3]]);
  });
});

describe('groupCallsPer', () => {
  it('groups the calls of one key together and never with another key', async () => {
    const seen: [string, number[]][] = [];
    const call = groupCallsPer(async (key: { name: string }, items: number[]) => {
      seen.push([key.name, items]);
      return items.map((i) => `${key.name}${i}`);
    }, 10);
    const a = { name: 'a' };
    const b = { name: 'b' };
    const out = await Promise.all([call(a, 1), call(b, 2), call(a, 3)]);
    assert.deepEqual(out, ['a1', 'b2', 'a3']);
    assert.deepEqual(seen, [
      ['a', [1, 3]],
      ['b', [2]],
    ]);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError, RateLimitedError } from '../../shared/errors.js';
import { createPasswordGate } from './password-gate.js';

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('password hashing gate', () => {
  it('runs at most `concurrency` hashes at once, queues `queue` more in order and refuses the rest', async () => {
    const gate = createPasswordGate({ concurrency: 2, queue: 2 });
    const started = Array.from({ length: 4 }, () => deferred());
    const finish = Array.from({ length: 4 }, () => deferred<number>());
    const order: number[] = [];
    const calls = [0, 1, 2, 3].map((i) =>
      gate.run(() => {
        order.push(i);
        started[i]!.resolve();
        return finish[i]!.promise;
      }),
    );
    await Promise.all([started[0]!.promise, started[1]!.promise]);
    assert.deepEqual(order, [0, 1]);
    assert.deepEqual(gate.stats(), { running: 2, waiting: 2, peak: 2, refused: 0 });

    const refused = await gate.run(async () => 'never').catch((e: unknown) => e);
    assert.ok(refused instanceof RateLimitedError);
    assert.equal(refused.code, 'rate_limited');
    assert.equal(refused.retryAfterSeconds, 1);
    assert.equal(gate.stats().refused, 1);

    finish[1]!.resolve(1);
    assert.equal(await calls[1], 1);
    await started[2]!.promise;
    assert.deepEqual(order, [0, 1, 2]);
    assert.deepEqual(gate.stats(), { running: 2, waiting: 1, peak: 2, refused: 1 });

    // A hash that fails frees its slot like one that succeeds.
    finish[0]!.reject(new AppError('internal_error', 'scrypt failed'));
    await assert.rejects(calls[0]!, /scrypt failed/);
    await started[3]!.promise;
    assert.deepEqual(order, [0, 1, 2, 3]);
    finish[2]!.resolve(2);
    finish[3]!.resolve(3);
    assert.deepEqual(await Promise.all([calls[2], calls[3]]), [2, 3]);
    assert.deepEqual(gate.stats(), { running: 0, waiting: 0, peak: 2, refused: 1 });
  });

  it('with no waiting list, a hash beyond the running ones is refused at once', async () => {
    const gate = createPasswordGate({ concurrency: 1, queue: 0 });
    const hold = deferred();
    const first = gate.run(() => hold.promise);
    await assert.rejects(
      gate.run(async () => 1),
      (e: unknown) => e instanceof RateLimitedError,
    );
    hold.resolve();
    await first;
    assert.equal(await gate.run(async () => 1), 1);
  });
});

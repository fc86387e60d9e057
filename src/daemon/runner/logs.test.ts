import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fakeHubApi, leasedRun } from '../../../test/helpers/fake-hub-api.js';
import { createLogger } from '../../shared/logger.js';
import { HubRefusedError, HubUnreachableError } from '../hub-api.js';
import { RunHubCaller } from './hub-caller.js';
import { LogBuffer } from './logs.js';

const log = createLogger('test', 'silent');

function bufferOf(
  answer: Parameters<typeof fakeHubApi>[0],
  opts: { batch?: number; cap?: number; closing?: () => boolean } = {},
) {
  const hub = fakeHubApi(answer);
  const run = leasedRun();
  const caller = new RunHubCaller({ hub, closing: opts.closing ?? (() => false) });
  const logs = new LogBuffer(run, { caller, log, ...opts });
  const push = (...texts: string[]) => {
    for (const text of texts) logs.push({ stream: 'stdout', text, at: 1, phase: 'build' });
  };
  const uploaded = () =>
    hub.callsOf('runs/append_logs').map((b) => (b.lines as { text: string }[]).map((l) => l.text));
  return { hub, run, logs, push, uploaded };
}

const texts = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `line ${from + i}`);

describe('a run’s log buffer', () => {
  it('uploads the oldest lines first, one batch a flush, under the run’s lease', async () => {
    const b = bufferOf(() => ({}), { batch: 3 });
    b.push(...texts(7));
    for (let i = 0; i < 4; i++) await b.logs.flush();
    assert.deepEqual(b.uploaded(), [texts(3), texts(3, 3), texts(1, 6)]);
    const first = b.hub.calls[0]!.body;
    assert.equal(first.run_id, 'run_1');
    assert.equal(first.lease_epoch, 3);
    assert.deepEqual((first.lines as unknown[])[0], {
      stream: 'stdout',
      text: 'line 0',
      at: 1,
      phase: 'build',
    });
  });

  it('keeps the last 40 lines of each phase for its review, afresh when the phase starts again', async () => {
    const b = bufferOf(() => ({}));
    assert.equal(b.logs.excerpt('build'), null);
    b.push(...texts(50));
    b.logs.push({ stream: 'stderr', text: 'other', at: 1, phase: 'test' });
    b.logs.push({ stream: 'system', text: 'no phase', at: 1, phase: null });
    assert.equal(b.logs.excerpt('build'), texts(40, 10).join('\n'));
    assert.equal(b.logs.excerpt('test'), 'other');
    await b.logs.flush();
    assert.equal(b.logs.excerpt('build'), texts(40, 10).join('\n'), 'uploads keep the excerpt');
    b.logs.startPhase('build');
    assert.equal(b.logs.excerpt('build'), null);
    b.push('x'.repeat(20_000));
    const cut = b.logs.excerpt('build')!;
    assert.equal(cut.length, 16_384);
    assert.ok(cut.startsWith('…x'));
  });

  it('uploads 1000 lines a batch by default', async () => {
    const b = bufferOf(() => ({}));
    b.push(...texts(1500));
    await b.logs.flush();
    assert.equal(b.uploaded()[0]!.length, 1000);
    assert.equal(b.logs.pending, 500);
  });

  it('starts an upload only when the one before it has ended', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const b = bufferOf(
      (_op, body) => ((body.lines as { text: string }[])[0]!.text === 'line 0' ? held : {}),
      {
        batch: 2,
      },
    );
    b.push(...texts(4));
    const first = b.logs.flush();
    const second = b.logs.flush();
    await new Promise((r) => setImmediate(r));
    assert.equal(b.hub.calls.length, 1);
    release();
    await Promise.all([first, second]);
    assert.deepEqual(b.uploaded(), [texts(2), texts(2, 2)]);
  });

  it('puts a batch back in front when the hub cannot be reached', async () => {
    let down = true;
    const b = bufferOf(
      () => {
        if (down) throw new HubUnreachableError('hub unreachable');
        return {};
      },
      { batch: 2 },
    );
    b.push(...texts(3));
    await b.logs.flush();
    assert.equal(b.logs.pending, 3);
    b.push('line 3');
    down = false;
    await b.logs.flush();
    await b.logs.flush();
    assert.deepEqual(b.uploaded(), [texts(2), texts(2), texts(2, 2)]);
  });

  it('drops a batch the hub could not take while the buffer holds the cap, keeps it below', async () => {
    const b = bufferOf(
      () => {
        throw new HubUnreachableError('hub unreachable');
      },
      { batch: 2, cap: 5 },
    );
    b.push(...texts(8));
    await b.logs.flush();
    assert.equal(b.logs.pending, 6, 'six lines still wait: the batch was dropped');
    await b.logs.flush();
    assert.equal(b.logs.pending, 6, 'four lines waited: the batch went back');
    assert.deepEqual(b.uploaded(), [texts(2), texts(2, 2)]);
  });

  it('drops a batch the hub refused and goes on with the next', async () => {
    let refuse = true;
    const b = bufferOf(
      () => {
        if (refuse) throw new HubRefusedError(400, 'validation_failed', 'line too long');
        return {};
      },
      { batch: 2 },
    );
    b.push(...texts(4));
    await b.logs.flush();
    refuse = false;
    await b.logs.flush();
    assert.equal(b.logs.pending, 0);
    assert.deepEqual(b.uploaded(), [texts(2), texts(2, 2)]);
  });

  it('fences the run on a conflict and uploads nothing more', async () => {
    const b = bufferOf(
      () => {
        throw new HubRefusedError(409, 'conflict', 'stale lease');
      },
      { batch: 2 },
    );
    b.push(...texts(4));
    await b.logs.flush();
    await b.logs.flush();
    assert.equal(b.run.fences, 1);
    assert.equal(b.hub.calls.length, 1);
  });

  it('uploads nothing while the daemon is stopping', async () => {
    const b = bufferOf(() => ({}), { closing: () => true });
    b.push('line 0');
    await b.logs.flush();
    assert.equal(b.hub.calls.length, 0);
    assert.equal(b.logs.pending, 1);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Conn, sendFrame } from './connection.js';

describe("a tunnel's frames", () => {
  it('leave together at the end of the turn that sent them, in the order sent', async () => {
    const log: string[] = [];
    let corks = 0;
    const conn = {
      ws: { send: (text: string) => log.push(`send ${text} (corked ${corks})`) },
      socket: {
        cork: () => {
          corks++;
        },
        uncork: () => {
          corks--;
          log.push('uncork');
        },
      },
    } as unknown as Conn;
    sendFrame(conn, 'a');
    await Promise.resolve();
    // A frame sent later in the same turn (a claim's reply, then its run's execute) joins the first.
    sendFrame(conn, 'b');
    assert.deepEqual(log, ['send a (corked 1)', 'send b (corked 1)']);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log.slice(2), ['uncork']);
    assert.equal(corks, 0);
    // The next turn's frames are corked again, and uncorked again.
    sendFrame(conn, 'c');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log.slice(3), ['send c (corked 1)', 'uncork']);
    assert.equal(corks, 0);
  });
});

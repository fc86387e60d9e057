import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Conn, sendFrames } from './connection.js';

describe("a tunnel's frames", () => {
  /** A connection that logs its socket's corks and the frames sent, with the cork depth at each. */
  function fakeConn() {
    const log: string[] = [];
    let corks = 0;
    const conn = {
      closed: false,
      ws: {
        send: (text: string) => {
          log.push(`${text} ${corks ? 'corked' : 'sent'}`);
          if (text === 'closes') conn.closed = true;
        },
      },
      socket: {
        cork: () => {
          corks++;
        },
        uncork: () => {
          corks--;
          log.push('uncork');
        },
      },
    };
    return { conn: conn as unknown as Conn, log, corks: () => corks };
  }

  it('given together leave in one write, at once, in their order', () => {
    const { conn, log, corks } = fakeConn();
    sendFrames(conn, ['a', 'b', 'c']);
    assert.deepEqual(log, ['a corked', 'b corked', 'c corked', 'uncork']);
    assert.equal(corks(), 0);
  });

  it('alone leave without corking the socket', () => {
    const { conn, log } = fakeConn();
    sendFrames(conn, ['a']);
    sendFrames(conn, []);
    assert.deepEqual(log, ['a sent']);
  });

  it('stop at a closed connection, and leave its socket uncorked', () => {
    const { conn, log, corks } = fakeConn();
    sendFrames(conn, ['a', 'closes', 'b']);
    assert.deepEqual(log, ['a corked', 'closes corked', 'uncork']);
    assert.equal(corks(), 0);
  });
});

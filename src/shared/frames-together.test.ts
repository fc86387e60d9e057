import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { sendFrameTogether } from './frames-together.js';

/** Counts the system-call-level writes of a `ws` socket (`_write` for one chunk, `_writev` for several). */
function countWrites(ws: WebSocket): { writes: number } {
  const socket = (ws as unknown as { _socket: Record<string, (...args: unknown[]) => unknown> })._socket;
  const counted = { writes: 0 };
  for (const name of ['_write', '_writev'] as const) {
    const original = socket[name]!;
    socket[name] = function (this: unknown, ...args: unknown[]) {
      counted.writes++;
      return original.apply(this, args);
    };
  }
  return counted;
}

describe('frames sent together', () => {
  let server: WebSocketServer;
  let client: WebSocket;
  let peer: WebSocket;
  const received: string[] = [];

  before(async () => {
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(server, 'listening');
    const accepted = once(server, 'connection');
    client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
    [peer] = (await accepted) as [WebSocket];
    peer.on('message', (data) => received.push(String(data)));
    await once(client, 'open');
  });
  after(async () => {
    client.close();
    await once(client, 'close');
    server.close();
  });

  it('leave in one write when sent in the same turn, in order, and later ones in a write of their own', async () => {
    const counted = countWrites(client);
    for (const n of [1, 2, 3]) sendFrameTogether(client, `frame ${n}`);
    assert.equal(counted.writes, 0, 'nothing is written before the turn ends');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(counted.writes, 1);
    sendFrameTogether(client, 'frame 4');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(counted.writes, 2);
    while (received.length < 4) await once(peer, 'message');
    assert.deepEqual(received, ['frame 1', 'frame 2', 'frame 3', 'frame 4']);
  });
});

import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { drainRequestBody } from './drain.js';

const LIMIT = 64 * 1024;

/**
 * A server that answers every request at once, before reading its body (as the hub and the daemon
 * do for a body over their limit), and drains the rest up to LIMIT bytes.
 */
describe('draining an unread request body', () => {
  let server: http.Server;
  let port: number;
  const drained: boolean[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      const draining = drainRequestBody(req, LIMIT);
      drained.push(draining);
      res.writeHead(400, {
        'content-type': 'application/json',
        ...(draining ? {} : { connection: 'close' }),
      });
      res.end('{"ok":false}');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  /** Sends raw bytes, then resolves with everything received until the server closes or `until` matches. */
  function exchange(socket: net.Socket, bytes: Buffer, until?: RegExp): Promise<string> {
    return new Promise((resolve) => {
      let text = '';
      const finish = () => {
        socket.removeAllListeners('data');
        resolve(text);
      };
      socket.on('data', (c: Buffer) => {
        text += c.toString('latin1');
        if (until?.test(text)) finish();
      });
      socket.once('close', finish);
      socket.once('error', finish);
      socket.write(bytes);
    });
  }

  const head = (framing: string) =>
    Buffer.from(
      `POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`,
    );

  it('reads a body within the limit to its end and keeps the connection for the next request', async () => {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    const body = Buffer.alloc(LIMIT, 'x');
    const first = await exchange(
      socket,
      Buffer.concat([head(`Content-Length: ${LIMIT}`), body]),
      /\{"ok":false\}/,
    );
    assert.match(first, /^HTTP\/1\.1 400/);
    assert.doesNotMatch(first, /connection: close/i);
    const second = await exchange(socket, head('Content-Length: 0'), /\{"ok":false\}/);
    assert.match(second, /^HTTP\/1\.1 400/);
    socket.destroy();
    assert.deepEqual(drained.splice(0), [true, false]);
  });

  it('does not drain a body declared larger than the limit: the reply says the connection closes', async () => {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    const reply = await exchange(socket, head(`Content-Length: ${LIMIT + 1}`));
    assert.match(reply, /^HTTP\/1\.1 400[\s\S]*connection: close/i);
    socket.destroy();
    assert.deepEqual(drained.splice(0), [false]);
  });

  it('closes the connection once a chunked body has gone past the limit', { timeout: 10_000 }, async () => {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    const chunk = Buffer.concat([
      Buffer.from(`${(LIMIT * 2).toString(16)}\r\n`),
      Buffer.alloc(LIMIT * 2, 'x'),
    ]);
    const closed = once(socket, 'close');
    await exchange(socket, Buffer.concat([head('Transfer-Encoding: chunked'), chunk]));
    await closed;
    assert.deepEqual(drained.splice(0), [true]);
  });
});

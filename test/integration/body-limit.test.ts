import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { RunningDaemon } from '../../src/daemon/main.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { daemonHome, startTestDaemon } from './daemon-harness.js';

const OVER_LIMIT = 11 * 1024 * 1024;

interface RawReply {
  status: number;
  headers: string;
  // biome-ignore lint/suspicious/noExplicitAny: replies are inspected freely
  body: any;
}

/**
 * A client that writes its whole request (head and body) before it reads anything, as many do: the
 * socket does not read until every byte was handed to the kernel, then reads one reply. Rejects
 * when the connection fails (a reset while writing, or no reply).
 */
function writeAllThenRead(baseUrl: string, path: string, size: number, chunked = false): Promise<RawReply> {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = new net.Socket();
    socket.pause();
    let received = Buffer.alloc(0);
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    socket.on('error', fail);
    socket.on('close', () => reject(new Error(`connection closed after ${received.length} bytes of reply`)));
    const read = () => {
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        const text = received.toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        if (end < 0) return;
        const headers = text.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(headers)?.[1] ?? Number.NaN);
        if (received.length < end + 4 + length) return;
        const body = received.subarray(end + 4, end + 4 + length).toString('utf8');
        socket.removeAllListeners('close');
        socket.destroy();
        resolve({ status: Number(headers.split(' ')[1]), headers, body: JSON.parse(body) });
      });
      socket.resume();
    };
    socket.connect(Number(u.port), u.hostname, () => {
      const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`;
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`,
      );
      const body = Buffer.alloc(size, 'x');
      const done = (err?: Error | null) => (err ? fail(err) : read());
      if (!chunked) socket.write(body, done);
      else
        socket.write(
          Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]),
          done,
        );
    });
  });
}

describe('a body over 10 MB gets its error reply', () => {
  let h: TestHub;
  let d: RunningDaemon;
  const home = daemonHome();
  before(async () => {
    h = await startTestHub();
    d = await startTestDaemon(home.dir);
  });
  after(async () => {
    await d?.close();
    await h?.close();
    home.cleanup();
  });

  for (const chunked of [false, true]) {
    const framing = chunked ? 'chunked' : 'with Content-Length';
    it(`the hub answers bad_request to a client that writes 11 MB (${framing}) before reading`, async () => {
      const r = await writeAllThenRead(h.url, '/v1/tokens/create', OVER_LIMIT, chunked);
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, {
        ok: false,
        error: 'request body is larger than 10 MB',
        code: 'bad_request',
      });
    });

    it(`the daemon answers BAD_REQUEST to a client that writes 11 MB (${framing}) before reading`, async () => {
      const r = await writeAllThenRead(d.url, '/v1/hug/deliver', OVER_LIMIT, chunked);
      assert.equal(r.status, 400);
      assert.equal(r.body.ok, false);
      assert.equal(r.body.error.code, 'BAD_REQUEST');
    });
  }

  it('both servers still answer after draining such bodies', async () => {
    assert.equal((await fetch(`${h.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${d.url}/healthz`)).status, 200);
  });
});

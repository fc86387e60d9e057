import type { IncomingMessage } from 'node:http';

/**
 * How much of a request body the hub and the daemon still read (and discard) after answering it
 * early, so that the reply reaches a client that writes its whole body before reading (CONTRACT.md
 * §6). A longer body closes the connection.
 */
export const DRAIN_LIMIT = 64 * 1024 * 1024;

/**
 * Called before replying to a request whose body was not read to its end (larger than the body
 * limit, not JSON): keeps reading it and throws the bytes away, so the client can finish writing
 * and then read the reply. Closing at once would reset the connection while the client still
 * writes, and a reset discards the reply on the client's side.
 *
 * Returns true when the body is being drained: the reply must then keep the connection open (no
 * `Connection: close`; it is reusable once the body has ended). A body that declares more than
 * `limit` bytes is not drained, and one that turns out longer (chunked) closes the connection
 * once `limit` bytes were discarded. Memory stays bounded: nothing is kept.
 */
export function drainRequestBody(req: IncomingMessage, limit = DRAIN_LIMIT): boolean {
  if (req.complete || req.destroyed) return false;
  const declared = Number(req.headers['content-length']);
  if (declared === 0 || (Number.isFinite(declared) && declared > limit)) return false;
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > limit) req.socket.destroy();
  });
  req.resume();
  return true;
}

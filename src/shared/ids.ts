import { randomFillSync } from 'node:crypto';

let lastMs = 0;
let counter = 0;

/**
 * A time-ordered UUID (v7, RFC 9562): 48 bits of ms timestamp, then a 12-bit counter (method 1 of
 * §6.2) so ids made in the same millisecond by this process still sort in creation order, then
 * 62 random bits.
 */
export function uuidv7(now: number = Date.now()): string {
  const b = randomBlock();
  if (now > lastMs) {
    lastMs = now;
    counter = b.readUInt16BE(0) & 0x3ff; // leave room to count up
  } else if (++counter > 0xfff) {
    lastMs += 1; // counter exhausted: borrow the next millisecond
    counter = 0;
  }
  b.writeUIntBE(lastMs, 0, 6);
  b[6] = 0x70 | (counter >> 8);
  b[7] = counter & 0xff;
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Random bytes are drawn from the system 4 KiB at a time, 16 bytes an id (a call per id is costly). */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
function randomBlock(): Buffer {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  poolAt += 16;
  return pool.subarray(poolAt - 16, poolAt);
}

export type IdGen = () => string;
export type Clock = () => number;

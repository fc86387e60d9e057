import type { EventEmitter } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { type RawData, WebSocket } from 'ws';
import { groupCalls } from '../../shared/group-calls.js';
import { jsonTextTooDeep, tooDeepMessage } from '../../shared/json-depth.js';
import type {
  AckFrame,
  AclEntry,
  AclFrame,
  CallFrame,
  HelloFrame,
  ReplyFrame,
} from '../../shared/protocol.js';
import { DaemonFrame } from '../../shared/protocol.js';
import type { Hub } from '../context.js';
import {
  type CommandResult,
  type DispatchKeys,
  type NewCommand,
  type NoticedCommand,
  type OpCaller,
  SEALED_SECRETS_FIELD,
  type TunnelEventMap,
} from '../ports.js';
import { realmAcl } from './acl.js';
import { signDispatch } from './dispatch.js';
import {
  daemonsWithDueCommands,
  markAcked,
  recordNoticedSent,
  type StoredCommand,
  storeCommands,
  takePendingCommands,
} from './outbox.repo.js';
import type { Presence } from './presence.js';

/** What the tunnel needs from the hub: everything but itself. */
export type TunnelDeps = Omit<Hub, 'tunnel'>;

/** Shared state of one process's tunnel (see tunnel.ts). */
export interface TunnelState {
  deps: TunnelDeps;
  keys: DispatchKeys;
  /** This hub process: recorded as `daemons.hub_instance_id` while a daemon is connected here. */
  instanceId: string;
  /** The live connection of each daemon connected to this process. */
  conns: Map<string, Conn>;
  events: EventEmitter<TunnelEventMap>;
  /** Keeps a background promise until it settles, so close() can wait for it; logs its failure. */
  track(p: Promise<unknown>, what: string): void;
  /** Runs the hub operations daemons call over the tunnel (set when the tunnel is attached). */
  calls: OpCaller | null;
  /** Acks received and not yet recorded: recorded together, in one statement. */
  acks: { conn: Conn; ack: AckFrame }[];
  /** A batch of acks is being recorded: those arriving meanwhile make the next one. */
  recordingAcks: boolean;
  /** The acks waiting for others (`ackWindowMs`) before their batch is recorded. */
  ackWindow: NodeJS.Timeout | null;
  /** Whether something waits for this command's ack (`waitForAck`, here or on another process). */
  awaited(txId: string): boolean;
  /** Daemons' online/offline/last-seen writes (presence.ts). */
  presence: Presence;
  /** A realm's ACL being read for connections' hellos: connections that open together share it. */
  aclReads: Map<string, Promise<AclEntry[]>>;
  /** Whether commands wait for a daemon whose tunnel opens (`waitingOnOpen`). */
  waitingOnOpen(conn: Conn): Promise<boolean>;
  /** Commands sent from their notices, recorded as sent unless acked first (`noticedSent`). */
  sentRecords: SentRecords;
}

/**
 * A tunnel's WebSocket (the server's `WebSocket` class): it holds its connection, so that one set of
 * listeners serves every socket instead of four closures per idle daemon.
 */
export class TunnelSocket extends WebSocket {
  conn: Conn | null = null;
}

/** One daemon's WebSocket to this hub process. */
export interface Conn {
  id: string;
  ws: TunnelSocket;
  daemonId: string;
  realmId: string;
  orgId: string;
  /** The upgrade's `Authorization` header: calls over the tunnel are authenticated with it. */
  authorization: string;
  /**
   * The upgrade's socket: its address is read when a call needs it (`getpeername` is a system call
   * that an idle daemon would pay for nothing, and its string would be kept). It is corked from the
   * upgrade until the hello is sent (`greet`), and while frames sent together are handed to it
   * (`sendFrames`).
   */
  socket: { readonly remoteAddress?: string | undefined; cork(): void; uncork(): void };
  openedAt: number;
  /** Answered the last ping (or sent anything since). */
  alive: boolean;
  lastTouchAt: number;
  /** Hello sent: commands and ACL frames may follow. */
  ready: boolean;
  closed: boolean;
  /** An ACL change arrived before the hello went out. */
  aclStale: boolean;
  opening: Promise<void> | null;
  flushing: Promise<void> | null;
  dirty: boolean;
  /** The dispatch token the connection's command frames carry, reused until half its life is gone. */
  token?: { token: string; expires_at: number; renew_at: number };
  /**
   * Commands sent without an outbox row and not acked yet, by tx_id, with their path (made at the
   * first: most daemons get none).
   */
  unstored?: Map<string, string>;
}

/**
 * Unstored commands a connection remembers unacked, at most: past it, the oldest one's ack goes to
 * the outbox as any other, where it changes nothing.
 */
const MAX_UNSTORED = 1_000;

/**
 * The hub-held dispatch token of a connection's command frames: signed once and reused until half
 * its lifetime has passed (a daemon obeys frames of its tunnel; the token is for callers that
 * replay them over HTTP), not signed again for every frame.
 */
async function commandToken(s: TunnelState, conn: Conn, at: number): Promise<string> {
  const kept = keptToken(conn, at);
  if (kept) return kept;
  const ttl = s.deps.config.dispatchTokenTtlMs;
  const signed = await signDispatch(s.keys, conn.daemonId, at, ttl);
  conn.token = { ...signed, renew_at: at + ttl / 2 };
  return signed.token;
}

/** The connection's signed token while it needs no renewal at `at`, else null. */
function keptToken(conn: Conn, at: number): string | null {
  return conn.token && conn.token.renew_at > at ? conn.token.token : null;
}

/** Commands read from the outbox per query when delivering. */
const BATCH = 200;
/** Opening tunnels whose waiting commands are looked for in one statement, at most. */
const OPENING_GROUP = 500;
/** last_seen_at is written on pongs at most this often. */
export const TOUCH_EVERY_MS = 5_000;

export function sendFrame(conn: Conn, frame: HelloFrame | AclFrame | ReplyFrame | string): void {
  conn.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
}

/**
 * Sends several frames to one connection in one write (a group's offers to a daemon, a delivery of
 * its outbox), at once: the socket is corked only while they are handed to it.
 */
export function sendFrames(conn: Conn, frames: readonly string[]): void {
  if (frames.length > 1) conn.socket.cork();
  for (const frame of frames) {
    if (conn.closed) break;
    sendFrame(conn, frame);
  }
  if (frames.length > 1) conn.socket.uncork();
}

/**
 * A new connection: it replaces the daemon's previous one on this process, marks the daemon
 * online, sends the hello frame and then every pending command, oldest first.
 */
export function openConnection(s: TunnelState, conn: Conn): void {
  const prev = s.conns.get(conn.daemonId);
  s.conns.set(conn.daemonId, conn);
  if (prev) prev.ws.close(4000, 'replaced by a newer connection');
  const on = listenersOf(s);
  conn.ws.conn = conn;
  conn.ws.on('message', on.message);
  conn.ws.on('pong', on.pong);
  conn.ws.on('error', on.error);
  conn.ws.on('close', on.close);
  // Kept while the greeting runs (a close waits for it), then dropped: an idle daemon holds no promise.
  const opening = greet(s, conn).finally(() => {
    if (conn.opening === opening) conn.opening = null;
  });
  conn.opening = opening;
  s.track(opening, 'tunnel open');
}

interface SocketListeners {
  message(this: WebSocket, data: RawData): void;
  pong(this: WebSocket): void;
  error(this: WebSocket, err: Error): void;
  close(this: WebSocket): void;
}

const connOf = (ws: WebSocket): Conn | null => (ws as TunnelSocket).conn;

/** One set of socket listeners per tunnel: each finds its connection on the socket (`this`). */
const listeners = new WeakMap<TunnelState, SocketListeners>();

function listenersOf(s: TunnelState): SocketListeners {
  let on = listeners.get(s);
  if (!on) {
    on = {
      message(data) {
        const conn = connOf(this);
        if (conn) onMessage(s, conn, data.toString());
      },
      pong() {
        const conn = connOf(this);
        if (conn) onPong(s, conn);
      },
      error(err) {
        s.deps.log.warn({ err, daemon_id: connOf(this)?.daemonId }, 'tunnel socket error');
      },
      close() {
        const conn = connOf(this);
        if (conn) onClose(s, conn);
      },
    };
    listeners.set(s, on);
  }
  return on;
}

async function greet(s: TunnelState, conn: Conn): Promise<void> {
  let onlineAt: number;
  let acl: AclEntry[];
  try {
    onlineAt = await s.presence.connected(conn);
    acl = await helloAcl(s, conn.realmId);
  } catch (err) {
    // A daemon without its hello would wait for nothing: it dials again, and is greeted then.
    conn.socket.uncork();
    conn.ws.close(1011, 'the hub could not record the connection');
    throw err;
  }
  if (conn.closed) return;
  const hello: HelloFrame = {
    type: 'hello',
    daemon_id: conn.daemonId,
    realm_id: conn.realmId,
    dispatch_key: s.keys.publicJwk as Record<string, unknown>,
    acl,
    features: ['calls'],
  };
  sendFrame(conn, hello);
  // The upgrade's 101 and the hello leave in one write (the tunnel corked the socket for it): one
  // wake of the daemon's process instead of two, and one system call here.
  conn.socket.uncork();
  conn.ready = true;
  if (conn.aclStale) await pushRealmAcl(s, conn.realmId);
  s.events.emit('connected', {
    daemon_id: conn.daemonId,
    connection_id: conn.id,
    online_at: onlineAt,
  });
  // Read once greeted: what is written from now on wakes the connection itself. A read that fails
  // leaves it to the delivery to look.
  if (await s.waitingOnOpen(conn).catch(() => true)) flush(s, conn);
}

/**
 * Whether commands wait for a daemon whose tunnel was just greeted: one read for the tunnels greeted
 * together (their presence is written in one transaction, so a reconnect storm's thousands are
 * greeted in groups), where each would otherwise read alone; most find none, and the delivery's own
 * read is then skipped. Commands sent on the new connection since its hello are left out by the
 * delivery's own read.
 */
export function waitingOnOpen(deps: TunnelDeps): (conn: Conn) => Promise<boolean> {
  return groupCalls(async (conns: Conn[]) => {
    const ids = conns.map((c) => c.daemonId);
    const due = await daemonsWithDueCommands(deps.db, ids, deps.now());
    return ids.map((id) => due.has(id));
  }, OPENING_GROUP);
}

/**
 * The realm's ACL for a hello, read once for the connections greeted together. A change during the
 * read is not missed: pushRealmAcl marks the connections not yet greeted, which push it after.
 */
function helloAcl(s: TunnelState, realmId: string): Promise<AclEntry[]> {
  let read = s.aclReads.get(realmId);
  if (!read) {
    read = realmAcl(s.deps.db, realmId).finally(() => s.aclReads.delete(realmId));
    s.aclReads.set(realmId, read);
  }
  return read;
}

/** Sends the realm's current ACL to its daemons connected here. */
export async function pushRealmAcl(s: TunnelState, realmId: string): Promise<void> {
  const targets = [...s.conns.values()].filter((c) => c.realmId === realmId && !c.closed);
  if (targets.length === 0) return;
  for (const c of targets) c.aclStale = true;
  const acl: AclEntry[] = await realmAcl(s.deps.db, realmId);
  const frame = JSON.stringify({ type: 'acl', acl } satisfies AclFrame);
  for (const c of targets) {
    // A connection not yet greeted gets the ACL in its hello (or pushes it right after).
    if (!c.ready || c.closed) continue;
    c.aclStale = false;
    sendFrame(c, frame);
  }
}

/**
 * Delivers the daemon's pending commands that were not sent on this connection, or were sent
 * too long ago. One delivery runs at a time per connection; a wake during it runs it again.
 */
export function flush(s: TunnelState, conn: Conn): void {
  if (!conn.ready || conn.closed) return;
  if (conn.flushing) {
    conn.dirty = true;
    return;
  }
  conn.flushing = deliver(s, conn).finally(() => {
    conn.flushing = null;
  });
  s.track(conn.flushing, 'outbox delivery');
}

/**
 * A stored body with sealed secrets gets them opened (`secrets`) for this frame only. One that does
 * not open (its key was dropped from the ring) goes without them: the daemon then fails the phase
 * that needs one, naming it.
 */
function openBody(s: TunnelState, txId: string, body: string): string {
  if (!body.includes(`"${SEALED_SECRETS_FIELD}"`)) return body;
  const { [SEALED_SECRETS_FIELD]: sealed, ...rest } = JSON.parse(body) as Record<string, unknown>;
  try {
    const secrets = JSON.parse(s.deps.cipher.open(String(sealed))) as Record<string, string>;
    return JSON.stringify({ ...rest, secrets });
  } catch (err) {
    s.deps.log.error({ err, tx_id: txId }, 'the secrets of a command could not be opened; sent without them');
    return JSON.stringify(rest);
  }
}

async function deliver(s: TunnelState, conn: Conn): Promise<void> {
  const { db, now, config } = s.deps;
  do {
    conn.dirty = false;
    const at = now();
    // The attempt is counted as the commands are taken, before their frames leave, so a process
    // killed right after sending has recorded it. A frame counted but not sent (the socket closed)
    // goes out on the next connection.
    const rows = await takePendingCommands(
      db,
      conn.daemonId,
      Math.max(conn.openedAt, at - config.outboxResendMs),
      BATCH,
      at,
    );
    sendFrames(conn, await commandFrames(s, conn, rows, at));
    if (rows.length === BATCH) conn.dirty = true;
  } while (conn.dirty && !conn.closed);
}

async function commandFrames(
  s: TunnelState,
  conn: Conn,
  rows: readonly StoredCommand[],
  at: number,
  first = false,
): Promise<string[]> {
  if (rows.length === 0) return [];
  const token = await commandToken(s, conn, at);
  return rows.map((row) => commandFrame(s, row, token, first));
}

/**
 * A command's frame. The body is stored as JSON already: spliced in rather than parsed and
 * re-serialised. `first`: the command's first send (`CommandFrame.first`).
 */
function commandFrame(s: TunnelState, row: StoredCommand, token: string, first = false): string {
  return `{"type":"command","tx_id":${JSON.stringify(row.tx_id)},"path":${JSON.stringify(row.path)},"body":${openBody(s, row.tx_id, row.body)},"token":${JSON.stringify(token)}${first ? ',"first":true' : ''}}`;
}

/**
 * Sends a command another process wrote, from the notice that carried it (cluster/bus.ts): no read
 * of the outbox on its way. Only when the connection has no delivery under way and its token needs
 * no signing (so notices are sent in the order they came, with nothing in between), and was open
 * when the command was written (else its first delivery took it; the writer's clock may differ from
 * this one's, and a wrong guess costs a read of the outbox or a frame sent twice); otherwise the
 * outbox is delivered as for any wake. The command is recorded as sent unless its ack comes first
 * (`noticedSent`): should this process die before either record, or a delivery read it before, it
 * goes out again, and the daemon answers a repeated tx_id from its store.
 */
export function sendNoticed(s: TunnelState, conn: Conn, command: NoticedCommand): void {
  const at = s.deps.now();
  const token = keptToken(conn, at);
  if (command.written_at < conn.openedAt || !canSendNow(conn) || !token) {
    flush(s, conn);
    return;
  }
  sendFrame(conn, commandFrame(s, command, token));
  s.track(s.sentRecords.sent(command.tx_id), 'recording a noticed command as sent');
}

/** Commands sent from their notices (`sendNoticed`), on their way to being recorded as sent. */
export interface SentRecords {
  /** Records the command as sent after `outboxSentRecordMs`, unless its ack came first. */
  sent(txId: string): Promise<void>;
  /** Its ack arrived: the ack's record is the only one it needs. */
  acked(txId: string): void;
}

/**
 * Records commands sent from their notices as sent, unless acked meanwhile (the rule: an ack comes a
 * few milliseconds after its frame, and its own record ends the command's deliveries); those due
 * together (a busy process's offers and commands, to any daemons) in one statement. A record made
 * later only widens the window in which a scan may send the command again, as after a record lost
 * with a process killed right after the frame: the daemon answers a repeated tx_id from its store.
 */
export function noticedSent(deps: TunnelDeps): SentRecords {
  const unacked = new Set<string>();
  const record = groupCalls(async (txIds: string[]) => {
    const left = txIds.filter((t) => unacked.delete(t));
    if (left.length > 0) await recordNoticedSent(deps.db, left, deps.now());
    return txIds.map(() => undefined);
  }, MAX_RECORDED_TOGETHER);
  return {
    async sent(txId) {
      unacked.add(txId);
      await delay(deps.config.outboxSentRecordMs);
      if (unacked.has(txId)) await record(txId);
    },
    acked: (txId) => void unacked.delete(txId),
  };
}

/** Commands recorded as sent in one statement at most. */
const MAX_RECORDED_TOGETHER = 500;

/** Whether a command written now can go straight to this connection after its commit (tunnel.ts). */
export function canSendNow(conn: Conn | undefined): boolean {
  return conn?.ready === true && !conn.closed && conn.flushing === null && !conn.dirty;
}

/**
 * Sends committed commands written with `last_sent_at` (see `canSendNow`). Those written before
 * this connection opened are its delivery's (it sends what was not sent on it), so only the newer
 * ones go here; the socket closing before they leave is the same as any lost frame: the next
 * connection gets them. This is each command's first send (`CommandFrame.first`): the transaction
 * that wrote it recorded it as sent, so no delivery takes it before its resend interval. An offer
 * sent without an outbox row (commands.ts) that was made for the connection this one replaced is
 * written to the outbox now, for this connection's delivery; that rare write delays the others.
 */
export async function sendNow(s: TunnelState, conn: Conn, commands: readonly NewCommand[]): Promise<void> {
  const isMine = (c: NewCommand) => c.last_sent_at !== null && c.last_sent_at >= conn.openedAt;
  const mine = commands.filter(isMine);
  // Made for the connection this one replaced, and in no outbox: stored now, for its delivery.
  const late = commands.filter((c) => !c.stored && !isMine(c));
  if (late.length > 0) {
    await storeCommands(s.deps.db, conn.daemonId, late, s.deps.now());
    flush(s, conn);
  }
  const frames = await commandFrames(s, conn, mine, s.deps.now(), true);
  for (const c of mine) if (!c.stored) rememberUnstored(conn, c);
  sendFrames(conn, frames);
}

function rememberUnstored(conn: Conn, command: NewCommand): void {
  conn.unstored ??= new Map();
  conn.unstored.set(command.tx_id, command.path);
  if (conn.unstored.size > MAX_UNSTORED) conn.unstored.delete(conn.unstored.keys().next().value!);
}

function onMessage(s: TunnelState, conn: Conn, text: string): void {
  conn.alive = true;
  if (jsonTextTooDeep(text)) {
    s.deps.log.warn({ daemon_id: conn.daemonId }, `${tooDeepMessage('tunnel frame')}; ignored`);
    return;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    s.deps.log.warn({ daemon_id: conn.daemonId }, 'tunnel frame is not JSON; ignored');
    return;
  }
  const parsed = DaemonFrame.safeParse(json);
  if (!parsed.success) {
    s.deps.log.warn(
      { daemon_id: conn.daemonId, issues: parsed.error.issues },
      'unknown tunnel frame; ignored',
    );
    return;
  }
  const frame = parsed.data;
  if (frame.type === 'call') {
    s.track(answerCall(s, conn, frame), 'tunnel call');
    return;
  }
  s.sentRecords.acked(frame.tx_id);
  // An unstored command's ack has nothing to record: it is only told.
  const unstored = conn.unstored?.get(frame.tx_id);
  if (unstored !== undefined) {
    conn.unstored!.delete(frame.tx_id);
    emitAck(s, conn, frame, unstored);
    return;
  }
  s.acks.push({ conn, ack: frame });
  // Acks that arrive within `ackWindowMs` (from any daemon) are recorded in one statement, one batch
  // at a time in the order they arrived (two batches at once on two connections could commit in
  // either order), so that the first ack of a command is the one that counts. An ack that something
  // waits for ends the window: it is recorded at the end of this turn, with those before it.
  const awaited = s.awaited(frame.tx_id);
  if (s.recordingAcks) {
    if (awaited) recordAcksNow(s);
    return;
  }
  s.recordingAcks = true;
  if (awaited) setImmediate(() => s.track(recordAcks(s), 'tunnel acks'));
  else s.ackWindow = setTimeout(() => recordAcksNow(s), s.deps.config.ackWindowMs);
}

/**
 * Ends the acks' window (`ackWindowMs`): they are recorded at once. Nothing on a run's way waits for
 * that record (an offer's claim and a run's reports are calls of their own), so a busy hub records
 * its acks in a few statements instead of one or two per run; an ack something waits for ends the
 * window, and so does a closing connection, so that a daemon that acked and dialled again is not
 * sent what it acked (it would answer from its store all the same).
 */
function recordAcksNow(s: TunnelState): void {
  if (s.ackWindow === null) return;
  clearTimeout(s.ackWindow);
  s.ackWindow = null;
  s.track(recordAcks(s), 'tunnel acks');
}

async function recordAcks(s: TunnelState): Promise<void> {
  try {
    while (s.acks.length > 0) {
      // A batch that fails is lost: its commands stay pending and are sent again, and acked again.
      await recordAckBatch(s, s.acks.splice(0)).catch((err: unknown) =>
        s.deps.log.error({ err }, 'recording acks failed'),
      );
    }
  } finally {
    s.recordingAcks = false;
  }
}

async function recordAckBatch(s: TunnelState, batch: { conn: Conn; ack: AckFrame }[]): Promise<void> {
  const firsts = await markAcked(
    s.deps.db,
    batch.map(({ conn, ack }) => ({ daemonId: conn.daemonId, ack })),
    s.deps.now(),
  );
  batch.forEach(({ conn, ack }, i) => {
    const path = firsts[i];
    // null: a repeated ack, or a tx_id that is not this daemon's: nothing to do
    if (path) emitAck(s, conn, ack, path);
  });
}

/** Tells the hub a command was acked, with what it came back with. */
function emitAck(s: TunnelState, conn: Conn, ack: AckFrame, path: string): void {
  s.deps.log.debug({ daemon_id: conn.daemonId, tx_id: ack.tx_id, status: ack.status }, 'command acked');
  s.events.emit('ack', {
    path,
    tx_id: ack.tx_id,
    daemon_id: conn.daemonId,
    status: ack.status,
    reply: ack.status === 'ok' ? (ack.reply ?? null) : null,
    error: ack.status === 'error' ? (ack.error ?? null) : null,
  } as CommandResult & { path: string });
}

/** A hub operation called over the tunnel: answered as `POST /v1/<op>` with the daemon's token. */
async function answerCall(s: TunnelState, conn: Conn, call: CallFrame): Promise<void> {
  if (!s.calls) return;
  const { status, body } = await s.calls(
    conn.authorization,
    call.op,
    call.body,
    conn.socket.remoteAddress ?? '',
  );
  const reply: ReplyFrame = { type: 'reply', id: call.id, status, body };
  if (!conn.closed) sendFrame(conn, reply);
}

function onPong(s: TunnelState, conn: Conn): void {
  conn.alive = true;
  const at = s.deps.now();
  if (at - conn.lastTouchAt < TOUCH_EVERY_MS || conn.closed) return;
  conn.lastTouchAt = at;
  s.track(s.presence.touched(conn), 'tunnel touch');
}

/**
 * The daemon goes offline unless a newer connection replaced this one, here or on another hub
 * process (the `connection_id` check).
 */
function onClose(s: TunnelState, conn: Conn): void {
  conn.closed = true;
  recordAcksNow(s);
  if (s.conns.get(conn.daemonId) === conn) s.conns.delete(conn.daemonId);
  s.track(
    (async () => {
      await conn.opening?.catch(() => {});
      await conn.flushing?.catch(() => {});
      if (s.conns.has(conn.daemonId)) return;
      if (await s.presence.disconnected(conn))
        s.events.emit('disconnected', { daemon_id: conn.daemonId, connection_id: conn.id });
    })(),
    'tunnel close',
  );
}

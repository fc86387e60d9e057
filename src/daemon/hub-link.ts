import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import type { Clock } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import {
  type AckFrame,
  type AclEntry,
  type CallFrame,
  type CommandFrame,
  HubFrame,
  type ReplyFrame,
} from '../shared/protocol.js';
import { type BackoffOptions, backoffDelay, DEFAULT_BACKOFF, reconnectBackoff } from './backoff.js';
import { DaemonError } from './errors.js';
import type { DaemonIdentity } from './identity.js';
import type { Router } from './router.js';

/** Opens a WebSocket; tests and embedders may swap it (proxies, custom TLS). */
export type WebSocketFactory = (url: string, headers: Record<string, string>) => WebSocket;

export const defaultWebSocketFactory: WebSocketFactory = (url, headers) =>
  new WebSocket(url, { headers, handshakeTimeout: 10_000 });

export interface HubLinkOptions {
  /** Hub base URLs (`http(s)://…`): connect to one, fail over to the next. */
  urls: string[];
  realmToken: string;
  identity: DaemonIdentity;
  router: Router;
  log: Logger;
  now: Clock;
  createWebSocket?: WebSocketFactory;
  backoff?: Partial<BackoffOptions>;
  random?: () => number;
  /** Interval of the daemon's own pings; a hub that misses one is dropped (default 15 s). */
  heartbeatMs?: number;
  /** Commands run at once, per lane (offers, and the rest); the others wait their turn (default 8). */
  maxConcurrentCommands?: number;
}

export interface HubLinkEvents {
  /** The hub's `hello` was applied: the daemon has its id, the dispatch key and the ACL. */
  connected: [{ url: string; daemonId: string; realmId: string }];
  /** A session (one that got `hello`) ended. */
  disconnected: [{ url: string; code: number; reason: string }];
  /** A connection attempt failed before `hello`. */
  'connect-failed': [{ url: string; error: string }];
  /** An `ack` was sent for a command. */
  'command-acked': [{ tx_id: string; path: string; status: 'ok' | 'error'; replayed: boolean }];
  acl: [AclEntry[]];
}

/** A hub operation's answer over the tunnel: what `POST /v1/<op>` would have answered. */
export interface TunnelReply {
  status: number;
  body: unknown;
}

/** `http://h:1/base` → `ws://h:1/base/v1/daemons/connect`. */
export function tunnelUrl(hubUrl: string): string {
  return `${hubUrl.replace(/^http/, 'ws').replace(/\/+$/, '')}/v1/daemons/connect`;
}

/**
 * The daemon's end of the hub tunnel. Keeps one WebSocket to a hub, applies `hello` and `acl`
 * frames, runs `command` frames through the router (tx_id dedup included) and acks each one.
 * Reconnects with exponential backoff and full jitter, moving to the next hub URL after a failed
 * attempt.
 */
export class HubLink extends EventEmitter<HubLinkEvents> {
  private ws: WebSocket | null = null;
  private index = 0;
  private attempt = 0;
  /** How the last session ended (its close code), which picks the backoff; null once greeted. */
  private lastClose: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private stopping = false;
  /** Whether the hub answered the last heartbeat ping. */
  private alive = true;
  private session: { url: string; ws: WebSocket; calls: boolean } | null = null;
  /** Calls over the tunnel waiting for their reply (call id → its settlement). */
  private readonly calls = new Map<
    string,
    { ws: WebSocket; resolve: (r: TunnelReply) => void; reject: (e: Error) => void }
  >();
  private nextCall = 0;
  private readonly inFlight = new Set<Promise<void>>();
  /** Per lane, the commands waiting for a free slot and how many run (see `pump`). */
  private readonly lanes = { offers: new CommandLane(), other: new CommandLane() };
  private readonly backoff: BackoffOptions;
  private readonly factory: WebSocketFactory;

  constructor(private readonly opts: HubLinkOptions) {
    super();
    if (opts.urls.length === 0) throw new Error('HubLink needs at least one hub URL');
    this.backoff = { ...DEFAULT_BACKOFF, ...opts.backoff };
    this.factory = opts.createWebSocket ?? defaultWebSocketFactory;
  }

  /** Whether a session with `hello` is open now. */
  get connected(): boolean {
    return this.session !== null;
  }

  /** The hub URL of the open session (or of the current attempt). */
  get currentUrl(): string {
    return this.session?.url ?? this.opts.urls[this.index % this.opts.urls.length]!;
  }

  start(): void {
    this.connect();
  }

  /**
   * Calls a hub operation over the open session, with the realm token the tunnel was opened with:
   * the HTTP status and body `POST /v1/<op>` would have answered. Null when there is no session or
   * its hub does not serve calls (then use HTTP). Rejects when the session ends before the reply or
   * after `timeoutMs`; the call may or may not have run on the hub, as with a lost HTTP reply.
   */
  call(op: string, body: unknown, timeoutMs = 30_000): Promise<TunnelReply> | null {
    const session = this.session;
    if (!session?.calls || session.ws.readyState !== WebSocket.OPEN) return null;
    const id = String(++this.nextCall);
    const frame: CallFrame = { type: 'call', id, op, body };
    return new Promise<TunnelReply>((resolve, reject) => {
      const timer = setTimeout(
        () => settle(new Error(`no reply to ${op} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const settle = (r: TunnelReply | Error) => {
        clearTimeout(timer);
        this.calls.delete(id);
        if (r instanceof Error) reject(r);
        else resolve(r);
      };
      this.calls.set(id, { ws: session.ws, resolve: settle, reject: settle });
      session.ws.send(JSON.stringify(frame));
    });
  }

  /** Closes the tunnel cleanly, stops reconnecting and waits for commands being run. */
  async close(): Promise<void> {
    this.stopping = true;
    for (const lane of Object.values(this.lanes)) lane.queue.length = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.stopHeartbeat();
    const ws = this.ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close(1000, 'daemon shutting down');
      const force = setTimeout(() => ws.terminate(), 2000);
      await closed;
      clearTimeout(force);
    }
    await Promise.allSettled([...this.inFlight]);
  }

  private connect(): void {
    if (this.stopping) return;
    const url = this.opts.urls[this.index % this.opts.urls.length]!;
    const log = this.opts.log;
    let ws: WebSocket;
    try {
      ws = this.factory(tunnelUrl(url), { authorization: `Bearer ${this.opts.realmToken}` });
    } catch (err) {
      this.failed(url, (err as Error).message);
      return;
    }
    this.ws = ws;
    let lastError = 'connection closed';
    // Frames are handled in order: a command never runs before the `hello` before it is applied.
    let chain = Promise.resolve();

    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const text = data.toString();
      chain = chain
        .then(() => this.onFrame(ws, url, text))
        .catch((err) => log.error({ err }, 'hub frame failed'));
    });
    ws.on('pong', () => {
      if (this.session?.ws === ws) this.alive = true;
    });
    ws.on('error', (err) => {
      lastError = err.message;
      log.warn({ url, err: err.message }, 'hub tunnel error');
    });
    ws.on('close', (code, reason) => {
      if (this.ws === ws) this.ws = null;
      for (const c of [...this.calls.values()]) {
        if (c.ws === ws) c.reject(new Error('the hub tunnel closed before the reply'));
      }
      const hadSession = this.session?.ws === ws;
      if (hadSession) {
        this.session = null;
        this.stopHeartbeat();
        log.info({ url, code }, 'hub tunnel closed');
        this.emit('disconnected', { url, code, reason: reason.toString() });
        // A session that worked: retry the same hub first, from the smallest delay.
        this.attempt = 0;
        this.lastClose = code;
        this.schedule();
      } else {
        this.failed(url, lastError);
      }
    });
  }

  private failed(url: string, error: string): void {
    this.opts.log.warn({ url, error }, 'could not connect to the hub');
    this.emit('connect-failed', { url, error });
    this.index = (this.index + 1) % this.opts.urls.length;
    this.schedule();
  }

  private schedule(): void {
    if (this.stopping) return;
    const delay = backoffDelay(
      this.attempt++,
      reconnectBackoff(this.backoff, this.lastClose),
      this.opts.random,
    );
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
  }

  private async onFrame(ws: WebSocket, url: string, text: string): Promise<void> {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      this.opts.log.warn({ url }, 'hub sent a frame that is not JSON');
      return;
    }
    const parsed = HubFrame.safeParse(raw);
    if (!parsed.success) {
      const txId = (raw as { tx_id?: unknown } | null)?.tx_id;
      this.opts.log.warn({ url, issues: parsed.error.issues }, 'hub sent an invalid frame');
      if (typeof txId === 'string' && txId.length > 0) {
        const error = new DaemonError('BAD_REQUEST', 'invalid command frame').toBody();
        this.send(ws, { type: 'ack', tx_id: txId, status: 'error', error });
      }
      return;
    }
    const frame = parsed.data;
    if (frame.type === 'hello') {
      await this.opts.identity.applyHello(frame, url, this.opts.now());
      // The socket may have closed while the hello was being saved; its close already rescheduled.
      if (ws.readyState !== WebSocket.OPEN || this.stopping) return;
      this.session = { url, ws, calls: frame.features?.includes('calls') === true };
      this.lastClose = null;
      this.attempt = 0;
      this.startHeartbeat(ws);
      this.opts.log.info({ url, daemon_id: frame.daemon_id }, 'connected to the hub');
      this.emit('connected', { url, daemonId: frame.daemon_id, realmId: frame.realm_id });
    } else if (frame.type === 'acl') {
      this.opts.identity.setAcl(frame.acl);
      this.emit('acl', frame.acl);
    } else if (frame.type === 'reply') {
      this.answered(ws, frame);
    } else {
      const lane = frame.path === 'offer_job' ? this.lanes.offers : this.lanes.other;
      lane.queue.push({ ws, frame });
      this.pump(lane);
    }
  }

  private answered(ws: WebSocket, reply: ReplyFrame): void {
    const c = this.calls.get(reply.id);
    if (c?.ws === ws) c.resolve({ status: reply.status, body: reply.body });
  }

  /**
   * Commands run concurrently (a claim waits on the hub), a bounded number at a time so a burst of
   * offers does not pile up hundreds of claims and queries at once. Offers have a lane of their own:
   * the `runs/execute` of a run already won never waits behind claims of others. Each is acked when
   * done.
   */
  private pump(lane: CommandLane): void {
    const max = this.opts.maxConcurrentCommands ?? 8;
    if (this.stopping) lane.queue.length = 0;
    while (lane.running < max && lane.queue.length > 0) {
      const { ws, frame } = lane.queue.shift()!;
      // Its connection is gone: the hub sends it again on the next one.
      if (ws.readyState !== WebSocket.OPEN) continue;
      lane.running++;
      const p = this.runCommand(ws, frame).finally(() => {
        lane.running--;
        this.inFlight.delete(p);
        this.pump(lane);
      });
      this.inFlight.add(p);
    }
  }

  private async runCommand(ws: WebSocket, frame: CommandFrame): Promise<void> {
    try {
      const { reply, replayed } = await this.opts.router.dispatch(
        frame.path,
        frame.body,
        { kind: 'hub' },
        { txId: frame.tx_id, first: frame.first === true },
      );
      const ack: AckFrame = reply.ok
        ? { type: 'ack', tx_id: frame.tx_id, status: 'ok', reply: reply.data }
        : { type: 'ack', tx_id: frame.tx_id, status: 'error', error: reply.error.toBody() };
      if (this.send(ws, ack)) {
        this.emit('command-acked', { tx_id: frame.tx_id, path: frame.path, status: ack.status, replayed });
      }
    } catch (err) {
      // Not acked: the hub redelivers the command after a reconnect.
      this.opts.log.error({ err, tx_id: frame.tx_id }, 'command failed before it could be acked');
    }
  }

  private send(ws: WebSocket, frame: AckFrame): boolean {
    if (ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(frame));
    return true;
  }

  private startHeartbeat(ws: WebSocket): void {
    this.stopHeartbeat();
    this.alive = true;
    this.heartbeat = setInterval(() => {
      if (!this.alive) {
        this.opts.log.warn('hub missed a heartbeat; reconnecting');
        ws.terminate();
        return;
      }
      this.alive = false;
      ws.ping();
    }, this.opts.heartbeatMs ?? 15_000);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}

/** Commands of one kind waiting for a slot, and how many of them run. */
class CommandLane {
  readonly queue: { ws: WebSocket; frame: CommandFrame }[] = [];
  running = 0;
}

/**
 * A client of the hub's server-sent event streams (CONTRACT.md §14), for the CLI and the console:
 * fetch-based (so it can send the token), resuming with `Last-Event-ID` after a dropped connection.
 */

export interface StreamEvent {
  id: string;
  event: string;
  data: unknown;
}

export interface FollowOptions {
  token: string | null;
  fetch?: typeof fetch;
  signal?: AbortSignal;
  /** Resume after this event id. */
  lastEventId?: string;
  /** Wait before reconnecting after a drop (ms). */
  retryMs?: number;
  /** Called each time the hub has accepted the stream (its headers arrived). */
  onOpen?(): void;
  /** Called for each event; answer true to stop following. */
  onEvent(e: StreamEvent): boolean | undefined | Promise<boolean | undefined>;
}

interface ErrorReply {
  code?: string;
  error?: string | { code?: string; message?: string };
}

/** Thrown when the hub refuses the stream (its JSON error reply, with the spec's code). */
export class StreamRefused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Follows the stream at `url` until `onEvent` answers true, the server ends it, or `signal`
 * aborts. A connection that drops is opened again with the last event id seen.
 */
export async function followEvents(url: string, opts: FollowOptions): Promise<void> {
  const doFetch = opts.fetch ?? fetch;
  let last = opts.lastEventId;
  for (;;) {
    if (opts.signal?.aborted) return;
    let res: Response;
    try {
      res = await doFetch(url, {
        headers: {
          accept: 'text/event-stream',
          ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
          ...(last ? { 'last-event-id': last } : {}),
        },
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
    } catch (err) {
      if (opts.signal?.aborted) return;
      // Never connected: the caller hears why. Connected before: the hub may be restarting.
      if (last === undefined) throw err;
      await pause(opts.retryMs ?? 1_000, opts.signal);
      continue;
    }
    if (!res.ok || !res.body) {
      // The hub's two error shapes: {ok: false, error: {code, message}} and {ok: false, error, code}.
      const body = (await res.json().catch(() => null)) as ErrorReply | null;
      const error = body?.error;
      const nested = typeof error === 'object' ? error : null;
      const code = nested?.code ?? body?.code ?? 'error';
      const message = nested?.message ?? (typeof error === 'string' ? error : `HTTP ${res.status}`);
      throw new StreamRefused(res.status, code, message);
    }
    opts.onOpen?.();
    try {
      for await (const e of parseEvents(res.body)) {
        last = e.id || last;
        if (await opts.onEvent(e)) {
          await res.body.cancel().catch(() => {});
          return;
        }
      }
      return; // the server ended the stream
    } catch {
      if (opts.signal?.aborted) return;
      // Dropped mid-stream: open it again after the last event seen.
      await pause(opts.retryMs ?? 1_000, opts.signal);
    }
  }
}

/** Parses `text/event-stream` into events (comments and `retry:` lines are skipped). */
export async function* parseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let id = '';
  let event = 'message';
  let data: string[] = [];
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (;;) {
      const nl = buffer.indexOf('\n');
      if (nl < 0) break;
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line === '') {
        if (data.length > 0) yield { id, event, data: JSON.parse(data.join('\n')) as unknown };
        event = 'message';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

import { open } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { ArtifactUpload } from '../shared/api/artifacts.js';
/**
 * The daemon's HTTP calls to the hub (`POST {hub}/v1/<op>`). Tries the hub the tunnel is connected
 * to first, then the other configured hubs, moving on only when a hub cannot be reached.
 */

/** The hub could not be reached at any configured URL. */
export class HubUnreachableError extends Error {
  override name = 'HubUnreachableError';
}

/** The hub answered with an error reply. */
export class HubRefusedError extends Error {
  override name = 'HubRefusedError';
  constructor(
    readonly status: number,
    /** The hub's error code (either hub error shape), or null when the body had none. */
    readonly hubCode: string | null,
    message: string,
  ) {
    super(message);
  }
}

export interface HubApiOptions {
  /** Hub base URLs in preference order (evaluated per call). */
  urls(): string[];
  /** The realm token (`svc_dt_…`), or null when none is configured. */
  realmToken: string | null;
  fetch?: typeof fetch;
  timeoutMs?: number;
  /**
   * Calls over the hub tunnel (HubLink.call): operations with the realm token go there first while
   * the tunnel is up, and over HTTP when it answers null or fails.
   */
  tunnel?: (op: string, body: unknown) => Promise<{ status: number; body: unknown }> | null;
}

export interface HubApi {
  /** Whether a hub URL and a realm token are configured. */
  readonly hasCredentials: boolean;
  /** `queue/claim` with the realm token; `claimed: false` when another daemon won. */
  claim(queueItemId: string, daemonId: string): Promise<{ claimed: boolean }>;
  /** `auth/whoami` with a caller's `svc_tok_`: the user id, or null when the hub refuses the token. */
  whoami(userToken: string): Promise<{ userId: string } | null>;
  /**
   * Any daemon-side hub operation with the realm token (`runs/report`, `runs/renew_lease`…): the
   * reply's `data`. Throws HubRefusedError (the hub said no) or HubUnreachableError.
   */
  call<T = unknown>(op: string, body: unknown): Promise<T>;
  /** `workspaces/remove {daemon_id, path}` with the realm token: whether the hub had it. */
  removeWorkspace(daemonId: string, path: string): Promise<{ removed: boolean }>;
  /**
   * An artifact upload with the realm token (src/daemon/artifacts/uploader.ts): without `send`, how
   * many bytes the hub has; with it, sends the bytes of `file` from `offset` on.
   */
  artifactUpload(
    query: ArtifactUploadQuery,
    send?: { offset: number; file: string },
  ): Promise<ArtifactUpload>;
}

export interface ArtifactUploadQuery {
  run_id: string;
  phase: string;
  name: string;
  sha256: string;
  size: number;
}

const CLAIM_ATTEMPTS = 3;

interface HubReply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: hub replies are checked field by field
  body: any;
}

const PUT_CHUNK = 256 * 1024;

/**
 * `PUT <url>` with the bytes of `file` from `start` on, read into two buffers used in turn: a buffer
 * is filled again only once the socket has taken what it held, so a file of any size costs the
 * daemon two buffers of memory and no garbage (a stream per chunk would let tens of MB pile up
 * before the collector runs).
 */
async function putFile(url: string, token: string, file: string, start: number): Promise<HubReply> {
  const fh = await open(file, 'r');
  try {
    const size = (await fh.stat()).size;
    const u = new URL(url);
    return await new Promise<HubReply>((resolve, reject) => {
      const req = (u.protocol === 'https:' ? https : http).request(
        u,
        {
          method: 'PUT',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/octet-stream',
            'content-length': String(Math.max(0, size - start)),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('error', reject);
          res.on('end', () => {
            let body: unknown = null;
            try {
              body = JSON.parse(text);
            } catch {}
            resolve({ status: res.statusCode ?? 0, body });
            if (!req.writableFinished) req.destroy();
          });
        },
      );
      req.on('error', reject);
      const pool = [Buffer.allocUnsafe(PUT_CHUNK), Buffer.allocUnsafe(PUT_CHUNK)];
      const taken: Promise<void>[] = [Promise.resolve(), Promise.resolve()];
      const send = async () => {
        let pos = start;
        for (let i = 0; pos < size && !req.destroyed; i = (i + 1) % pool.length) {
          await taken[i];
          const buf = pool[i]!;
          const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
          if (bytesRead === 0) break;
          pos += bytesRead;
          taken[i] = new Promise<void>((done, fail) =>
            req.write(buf.subarray(0, bytesRead), (err) => (err ? fail(err) : done())),
          );
          taken[i]!.catch(() => {});
        }
        await Promise.all(taken);
        req.end();
      };
      send().catch((err) => req.destroy(err as Error));
    });
  } finally {
    await fh.close();
  }
}

export function createHubApi(opts: HubApiOptions): HubApi {
  const doFetch = opts.fetch ?? fetch;
  const timeoutMs = opts.timeoutMs ?? 30_000;

  async function post(op: string, body: unknown, token: string): Promise<HubReply> {
    const viaTunnel = token === opts.realmToken ? opts.tunnel?.(op, body) : null;
    if (viaTunnel) {
      try {
        return (await viaTunnel) as HubReply;
      } catch {
        // The tunnel went down before the reply: the call goes again over HTTP.
      }
    }
    return send('POST', op, token, { body: JSON.stringify(body), timeoutMs });
  }

  /** One request to the first hub that answers; `open` gives a fresh body stream for each attempt. */
  async function send(
    method: string,
    op: string,
    token: string,
    req: { body?: string; timeoutMs?: number },
  ): Promise<HubReply> {
    const urls = opts.urls();
    if (urls.length === 0) throw new HubUnreachableError('no hub URL configured');
    let last: unknown;
    for (const base of urls) {
      let res: Response;
      try {
        res = await doFetch(`${base}/v1/${op}`, {
          method,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          ...(req.body !== undefined ? { body: req.body } : {}),
          ...(req.timeoutMs ? { signal: AbortSignal.timeout(req.timeoutMs) } : {}),
        });
      } catch (err) {
        last = err;
        continue;
      }
      const text = await res.text();
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(text);
      } catch {}
      return { status: res.status, body: parsed };
    }
    const cause = (last as { cause?: { code?: string; message?: string } } | undefined)?.cause;
    const why = [(last as Error | undefined)?.message, cause?.code ?? cause?.message]
      .filter(Boolean)
      .join(': ');
    throw new HubUnreachableError(`hub unreachable: ${why || 'unknown error'}`);
  }

  /** A file upload to the first hub that answers. */
  async function putToHub(
    op: string,
    token: string,
    body: { file: string; offset: number },
  ): Promise<HubReply> {
    let last: unknown;
    for (const base of opts.urls()) {
      try {
        return await putFile(`${base}/v1/${op}`, token, body.file, body.offset);
      } catch (err) {
        last = err;
      }
    }
    throw new HubUnreachableError(
      `hub unreachable: ${(last as Error | undefined)?.message ?? 'no hub URL configured'}`,
    );
  }

  const refused = (r: HubReply) => {
    const code =
      typeof r.body?.error?.code === 'string'
        ? r.body.error.code
        : typeof r.body?.code === 'string'
          ? r.body.code
          : null;
    const message =
      typeof r.body?.error?.message === 'string'
        ? r.body.error.message
        : typeof r.body?.error === 'string'
          ? r.body.error
          : `hub answered HTTP ${r.status}`;
    return new HubRefusedError(r.status, code, message);
  };

  return {
    hasCredentials: opts.realmToken !== null && opts.urls().length > 0,
    async claim(queueItemId, daemonId) {
      if (!opts.realmToken) throw new HubRefusedError(0, null, 'no realm token');
      const body = { queue_item_id: queueItemId, daemon_id: daemonId };
      // A claim is idempotent on the hub (the holder gets claimed: true again), so a claim whose
      // answer was lost (timeout, reset) is retried rather than reported as failed.
      let r: HubReply | null = null;
      for (let attempt = 1; r === null; attempt++) {
        try {
          r = await post('queue/claim', body, opts.realmToken);
        } catch (err) {
          if (!(err instanceof HubUnreachableError) || attempt >= CLAIM_ATTEMPTS) throw err;
        }
      }
      if (r.body?.ok !== true) throw refused(r);
      return { claimed: r.body.data?.claimed === true };
    },
    async call(op, body) {
      if (!opts.realmToken) throw new HubRefusedError(0, null, 'no realm token');
      const r = await post(op, body, opts.realmToken);
      if (r.body?.ok !== true) throw refused(r);
      return r.body.data;
    },
    async removeWorkspace(daemonId, path) {
      if (!opts.realmToken) throw new HubRefusedError(0, null, 'no realm token');
      const r = await post('workspaces/remove', { daemon_id: daemonId, path }, opts.realmToken);
      if (r.body?.ok !== true) throw refused(r);
      return { removed: r.body.removed === true };
    },
    async artifactUpload(query, body) {
      if (!opts.realmToken) throw new HubRefusedError(0, null, 'no realm token');
      const q = new URLSearchParams({
        run_id: query.run_id,
        phase: query.phase,
        name: query.name,
        sha256: query.sha256,
        size: String(query.size),
        ...(body ? { offset: String(body.offset) } : {}),
      });
      const r = body
        ? await putToHub(`artifact-uploads?${q}`, opts.realmToken, body)
        : await send('GET', `artifact-uploads?${q}`, opts.realmToken, { timeoutMs });
      if (r.body?.ok !== true) throw refused(r);
      return r.body.data as ArtifactUpload;
    },
    async whoami(userToken) {
      const r = await post('auth/whoami', {}, userToken);
      if (r.body?.ok === true) {
        const id = r.body.data?.user?.id;
        return typeof id === 'string' ? { userId: id } : null;
      }
      if (r.status === 401 || r.status === 403) return null;
      throw refused(r);
    },
  };
}

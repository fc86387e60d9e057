import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyRequest,
  LogController,
} from 'fastify';
import { sql } from 'kysely';
import { drainRequestBody } from '../shared/drain.js';
import { jsonTextTooDeep, tooDeepMessage } from '../shared/json-depth.js';
import type { Logger } from '../shared/logger.js';
import { receiveArtifact, UPLOAD_PATH, type UploadDeps } from './artifacts/upload.route.js';
import type { Caller } from './caller.js';
import type { CredentialChecker } from './credentials.js';
import { DaemonError } from './errors.js';
import { checkAccess, isLoopbackAddress } from './guard.js';
import { daemonOpenApi } from './openapi.js';
import type { DaemonContext, Router } from './router.js';

export const DAEMON_BODY_LIMIT = 10 * 1024 * 1024;

export interface DaemonAppDeps {
  ctx: DaemonContext;
  router: Router;
  checkCredential: CredentialChecker;
  /** The artifact upload route's limit and the folders of the phases running now. */
  artifacts: UploadDeps;
  /** Whether the daemon is in connected mode (has a dispatch key from its hub). */
  connected(): boolean;
  log: Logger;
}

const send = (err: DaemonError) => ({ ok: false, error: err.toBody() });

/** Maps anything thrown in the HTTP layer to a DaemonError; unknown faults become INTERNAL_ERROR. */
function toDaemonError(err: unknown, log: Logger): DaemonError {
  if (err instanceof DaemonError) return err;
  const fe = err as Partial<FastifyError>;
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new DaemonError('BAD_REQUEST', 'request body is larger than 10 MB');
  }
  if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new DaemonError('BAD_REQUEST', 'request body must be JSON (Content-Type: application/json)');
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new DaemonError('BAD_REQUEST', fe.message ?? 'bad request');
  }
  log.error({ err }, 'unexpected error in the daemon HTTP layer');
  return new DaemonError('INTERNAL_ERROR', 'internal error');
}

/**
 * The daemon's HTTP app: the access guard on every request (before routing, so an unknown path or
 * a CORS preflight is guarded too), one `POST /v1/<path>` per route, health and OpenAPI.
 */
export function createDaemonApp(deps: DaemonAppDeps): FastifyInstance {
  const { router, log } = deps;
  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    bodyLimit: DAEMON_BODY_LIMIT,
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
  });
  const callers = new WeakMap<FastifyRequest, Caller>();

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    if (body === '' || body === undefined) return done(null, {});
    if (jsonTextTooDeep(body as string)) {
      return done(new DaemonError('BAD_REQUEST', tooDeepMessage('request body')), undefined);
    }
    try {
      done(null, JSON.parse(body as string));
    } catch (e) {
      done(
        new DaemonError('BAD_REQUEST', `request body is not valid JSON: ${(e as Error).message}`),
        undefined,
      );
    }
  });

  app.setErrorHandler((err, req, reply) => {
    const e = toDaemonError(err, log);
    // A body refused before it was read to its end is drained: the reply reaches the client.
    if (drainRequestBody(req.raw)) reply.removeHeader('connection');
    void reply.status(e.status).send(send(e));
  });
  app.setNotFoundHandler((req, reply) => {
    void reply
      .status(404)
      .send(send(new DaemonError('NOT_FOUND', `no operation at ${req.method} ${req.url}`)));
  });

  app.addHook('onRequest', async (req, reply) => {
    const connected = deps.connected();
    const hasOrigin = req.headers.origin !== undefined;
    const remoteAddress = req.socket.remoteAddress;
    // The token is only verified for a caller on another host (it may cost a call to the hub).
    const credential =
      hasOrigin || isLoopbackAddress(remoteAddress)
        ? ({ kind: 'none' } as const)
        : await deps.checkCredential(req.headers.authorization, connected);
    const decision = checkAccess({ hasOrigin, remoteAddress, host: req.headers.host, connected, credential });
    if (!decision.allow) return reply.status(decision.error.status).send(send(decision.error));
    callers.set(req, decision.caller);
  });

  app.get('/healthz', async () => ({ ok: true }));
  app.get('/readyz', async (_req, reply) => {
    try {
      await sql`select 1`.execute(deps.ctx.db);
      return { ok: true };
    } catch {
      return reply.status(500).send(send(new DaemonError('INTERNAL_ERROR', 'storage unreachable')));
    }
  });
  const openapi = daemonOpenApi(router.routes);
  app.get('/openapi.json', async () => openapi);

  // Artifact bytes: a raw body streamed to disk (no body limit here: the route enforces its own).
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
    scope.post(`/v1/${UPLOAD_PATH}`, async (req, reply) => {
      const caller = callers.get(req);
      if (!caller) throw new Error('request reached a route without passing the access guard');
      const data = await receiveArtifact(deps.artifacts, caller, req.query, req.raw);
      return reply.status(200).send({ ok: true, data });
    });
  });

  for (const r of router.routes) {
    app.post(`/v1/${r.path}`, async (req, reply) => {
      const caller = callers.get(req);
      if (!caller) throw new Error('request reached a route without passing the access guard');
      const { reply: result } = await router.dispatch(r.path, req.body, caller);
      if (result.ok) return reply.status(200).send({ ok: true, data: result.data });
      return reply.status(result.error.status).send(send(result.error));
    });
  }
  return app;
}

/**
 * The URL the daemon's agents use (`SVC_DAEMON_URL`): always a loopback address, because the access
 * guard lets an agent in as a local caller only over loopback. A wildcard listener (`0.0.0.0`, `::`)
 * answers on 127.0.0.1 too. Null for a specific non-loopback address: the daemon then also listens
 * on loopback for its agents (listenForAgents).
 */
export function agentUrlOf(host: string, port: number): string | null {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  if (h === '0.0.0.0' || h === '::' || h === '' || h === 'localhost') return `http://127.0.0.1:${port}`;
  if (isLoopbackAddress(h)) return h.includes(':') ? `http://[${h}]:${port}` : `http://${h}:${port}`;
  return null;
}

/**
 * A second listener on 127.0.0.1 for the agents of a daemon bound to a specific non-loopback
 * address, serving the same app (the guard sees its callers as local). The same port when it is
 * free there, else any.
 */
export async function listenForAgents(
  app: FastifyInstance,
  port: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => app.routing(req, res));
  const listen = (p: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: p }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  try {
    await listen(port);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    await listen(0);
  }
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

import type { Socket } from 'node:net';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
  LogController,
} from 'fastify';
import { sql } from 'kysely';
import { drainRequestBody } from '../shared/drain.js';
import { AppError, RateLimitedError } from '../shared/errors.js';
import { jsonTextTooDeep, tooDeepMessage } from '../shared/json-depth.js';
import { merged } from '../shared/merged.js';
import { authenticate } from './auth/authenticate.js';
import type { Hub } from './context.js';
import { errorBody, statusOf, toAppError } from './http/errors.js';
import { BODY_LIMIT } from './http/limits.js';
import type { Op, OpContext } from './http/op.js';
import type { OpCaller, PasswordGateStats } from './ports.js';

export interface AppOptions {
  /** Version string shown in the OpenAPI document. */
  version?: string;
  /** More lines for /metrics, asked at each scrape (background jobs started after the app). */
  metrics?: readonly (() => string[])[];
}

const OPS_ROUTE = '/v1/*';

/** Builds the hub's HTTP app: `POST /v1/<operation>`, plus health, readiness, metrics, OpenAPI. */
export function createHubApp(hub: Hub, ops: Op[], opts: AppOptions = {}): FastifyInstance {
  const app = Fastify({
    loggerInstance: hub.log as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    logController: new LogController({ disableRequestLogging: true }),
    // No logger per request (a pino child costs more than the rest of a cached read's work): the
    // few lines logged while handling a request name its id themselves.
    childLoggerFactory: (logger) => logger,
    return503OnClosing: true,
    // Bodies are checked with zod (src/hub/http/op.ts) and replies are plain JSON: no route declares
    // a JSON schema, so Fastify's own compilers (ajv, fast-json-stringify) are never loaded.
    schemaController: { compilersFactory: { buildValidator: noSchemas, buildSerializer: noSchemas } },
  });
  const counts = new Map<string, number>();
  cutFreshConnectionsOnClose(app);

  // JSON only; an empty body is `{}`, malformed JSON or JSON nested deeper than MAX_JSON_DEPTH is
  // bad_request (checked on the text, before anything recursive runs on it).
  app.removeAllContentTypeParsers();
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      return done(new AppError('bad_request', 'request body is not valid UTF-8'), undefined);
    }
    if (text.trim() === '') return done(null, {});
    if (jsonTextTooDeep(text))
      return done(new AppError('bad_request', tooDeepMessage('request body')), undefined);
    try {
      done(null, JSON.parse(text));
    } catch (e) {
      done(new AppError('bad_request', `request body is not valid JSON: ${(e as Error).message}`), undefined);
    }
  });

  app.setErrorHandler((err, req, reply) => {
    const { error, unexpected } = toAppError(err);
    if (unexpected) req.log.error({ err, url: req.url, reqId: req.id }, 'unexpected error');
    if (error instanceof RateLimitedError) void reply.header('retry-after', String(error.retryAfterSeconds));
    // A body refused before it was read to its end (over the limit, not JSON) is drained, so the
    // reply reaches the client instead of a reset connection.
    if (drainRequestBody(req.raw)) reply.removeHeader('connection');
    void reply.status(statusOf(error)).send(errorBody(error));
  });
  app.setNotFoundHandler((req, reply) => {
    void reply
      .status(404)
      .send(errorBody(new AppError('not_found', `no operation at ${req.method} ${req.url}`)));
  });
  // Every operation is one route, `POST /v1/*`, dispatched by name: registering each as its own
  // route costs the hub's start a few milliseconds per hundred. Other routes under /v1/ (event
  // streams, artifacts, hooks) are more specific and match first.
  const byName = new Map(ops.map((o) => [o.name, o]));
  const opOf = (req: FastifyRequest) =>
    req.routeOptions.url === OPS_ROUTE ? byName.get((req.params as { '*': string })['*']) : undefined;
  app.addHook('onResponse', (req, reply, done) => {
    const op = opOf(req);
    const route = req.routeOptions.url === OPS_ROUTE ? op && `/v1/${op.name}` : req.routeOptions.url;
    const key = `${route ?? 'unknown'}|${reply.statusCode}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    done();
  });

  app.get('/healthz', async () => ({ ok: true }));
  app.get('/readyz', async (_req, reply) => {
    try {
      await sql`select 1`.execute(hub.db);
      return { ok: true };
    } catch {
      return reply
        .status(503)
        .send({ ok: false, error: { code: 'unavailable', message: 'storage unreachable' } });
    }
  });
  app.get('/metrics', async (_req, reply) => {
    const lines = ['# TYPE svc_hub_requests_total counter'];
    for (const [key, n] of counts) {
      const [route, status] = key.split('|');
      lines.push(`svc_hub_requests_total{route="${route}",status="${status}"} ${n}`);
    }
    lines.push(...passwordMetrics(hub.passwords.stats()));
    for (const more of opts.metrics ?? []) lines.push(...more());
    return reply.type('text/plain; version=0.0.4').send(`${lines.join('\n')}\n`);
  });
  // Made at the first request, not at start: it walks every operation's schemas, and its module
  // (with every reply's schema, src/shared/api/operations.ts) loads then too.
  let openapi: Record<string, unknown> | null = null;
  app.get('/openapi.json', async () => {
    const { openApiDocument } = await import('./openapi.js');
    openapi ??= openApiDocument(ops, opts.version ?? '0.1.0');
    return openapi;
  });

  app.post(OPS_ROUTE, {
    // An unknown operation is refused before its body is read, as a missing route would be.
    onRequest: (req, _reply, done) =>
      done(opOf(req) ? undefined : new AppError('not_found', `no operation at ${req.method} ${req.url}`)),
    handler: async (req, reply) => {
      const r = await runOp(hub, opOf(req)!, req.headers.authorization, req.body, req.ip);
      return reply.status(r.status).send(r.body);
    },
  });
  return app;
}

function noSchemas(): never {
  throw new Error('the hub routes declare no JSON schema');
}

/** One operation for one caller: authenticate, parse the body, run the handler. Throws its refusals. */
async function runOp(
  hub: Hub,
  o: Op,
  authorization: string | undefined,
  body: unknown,
  ip: string,
): Promise<{ status: number; body: { ok: true } }> {
  const actor = await authenticate(hub, authorization);
  const parsed = o.input.safeParse(body ?? {});
  if (!parsed.success) throw parsed.error;
  let status = 200;
  const ctx: OpContext = merged(hub, { actor, ip, status: (s: number) => (status = s) });
  const out = await o.handler(ctx, parsed.data);
  return { status, body: { ok: true, ...out } };
}

/**
 * The operations for callers that are not HTTP (daemons calling over their tunnel): the same
 * authentication, validation and handlers, and the reply `POST /v1/<op>` would have, errors included.
 */
export function createOpCaller(hub: Hub, ops: Op[]): OpCaller {
  const byName = new Map(ops.map((o) => [o.name, o]));
  return async (authorization, name, body, ip) => {
    try {
      const o = byName.get(name);
      if (!o) throw new AppError('not_found', `no operation at POST /v1/${name}`);
      return await runOp(hub, o, authorization, body, ip);
    } catch (err) {
      const { error, unexpected } = toAppError(err);
      if (unexpected) hub.log.error({ err, op: name }, 'unexpected error');
      return { status: statusOf(error), body: errorBody(error) };
    }
  };
}

/** The password gate (src/hub/auth/password-gate.ts) in Prometheus text format. */
function passwordMetrics(s: PasswordGateStats): string[] {
  return [
    '# TYPE svc_hub_password_checks_running gauge',
    `svc_hub_password_checks_running ${s.running}`,
    '# TYPE svc_hub_password_checks_waiting gauge',
    `svc_hub_password_checks_waiting ${s.waiting}`,
    '# TYPE svc_hub_password_checks_peak gauge',
    `svc_hub_password_checks_peak ${s.peak}`,
    '# TYPE svc_hub_password_checks_refused_total counter',
    `svc_hub_password_checks_refused_total ${s.refused}`,
  ];
}

/**
 * A connection that has sent nothing yet (a browser's preconnection, a client's spare) is cut when the
 * hub stops: Node does not count it idle, so it would otherwise hold the server's close until the
 * shutdown's grace period ends. Connections that sent a request (or opened a tunnel) keep the grace.
 */
function cutFreshConnectionsOnClose(app: FastifyInstance): void {
  const open = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  app.addHook('preClose', async () => {
    for (const socket of open) if (socket.bytesRead === 0) socket.destroy();
  });
}

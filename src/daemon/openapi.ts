import { z } from 'zod';
import { DAEMON_REPLIES } from '../shared/api/daemon.js';
import { replyId } from '../shared/api/operations.js';
import { DAEMON_API_VERSION } from '../shared/protocol.js';
import { DAEMON_STATUS } from './errors.js';

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

import type { Route } from './router.js';

/** OpenAPI 3.1 of the daemon API, generated from the route schemas. */
export function daemonOpenApi(routes: readonly Route[]): Record<string, unknown> {
  const errorRef = ref('Error');
  const replies = DAEMON_REPLIES as Record<string, z.ZodObject | undefined>;
  const registry = z.registry<{ id: string }>();
  for (const r of routes) {
    const data = replies[r.path];
    if (data) registry.add(z.strictObject({ ok: z.literal(true), data }), { id: replyId(r.path) });
  }
  const { schemas } = z.toJSONSchema(registry, {
    uri: (id) => `#/components/schemas/${id}`,
    io: 'output',
    unrepresentable: 'any',
  });
  for (const s of Object.values(schemas)) {
    delete s.$schema;
    delete s.$id;
  }
  const paths: Record<string, unknown> = {
    '/healthz': { get: { operationId: 'healthz', responses: { '200': { description: 'alive' } } } },
    '/readyz': { get: { operationId: 'readyz', responses: { '200': { description: 'storage reachable' } } } },
  };
  for (const r of routes) {
    paths[`/v1/${r.path}`] = {
      post: {
        operationId: r.path.replace(/\//g, '_'),
        summary: r.summary,
        security: [{}, { bearer: [] }],
        requestBody: {
          required: false,
          content: {
            'application/json': { schema: z.toJSONSchema(r.input, { io: 'input', unrepresentable: 'any' }) },
          },
        },
        responses: {
          '200': {
            description: '`{ok: true, data}`',
            ...(replies[r.path] ? { content: { 'application/json': { schema: ref(replyId(r.path)) } } } : {}),
          },
          default: { description: 'an error', content: { 'application/json': { schema: errorRef } } },
        },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'svc daemon API', version: DAEMON_API_VERSION },
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Callers on another host: a dispatch JWT from the hub, a svc_tok_ of a realm member, or (unconnected) a local token.',
        },
      },
      schemas: {
        ...schemas,
        Error: {
          type: 'object',
          required: ['ok', 'error'],
          properties: {
            ok: { const: false },
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: {
                code: { type: 'string', enum: Object.keys(DAEMON_STATUS) },
                message: { type: 'string' },
                details: {},
              },
            },
          },
        },
      },
    },
    paths,
  };
}

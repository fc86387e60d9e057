import { z } from 'zod';
import { DAEMON_API_VERSION } from '../shared/protocol.js';
import { DAEMON_STATUS } from './errors.js';
import type { Route } from './router.js';

/** OpenAPI 3.1 of the daemon API, generated from the route schemas. */
export function daemonOpenApi(routes: readonly Route[]): Record<string, unknown> {
  const errorRef = { $ref: '#/components/schemas/Error' };
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
          '200': { description: '`{ok: true, data}`' },
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

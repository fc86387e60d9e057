import { z } from 'zod';
import { AccessErrorReply, ErrorReply } from '../shared/api/envelope.js';
import { COMPONENTS, REPLIES, replyId } from '../shared/api/operations.js';
import type { Op } from './http/op.js';

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
const json = (schema: unknown) => ({ 'application/json': { schema } });

/**
 * The hub's OpenAPI 3.1 document: each operation's request body from its zod schema, its success
 * reply (`{ok: true, ...}`) and both error shapes from the API module (src/shared/api/), the named
 * resources (Run, Review…) as shared components.
 */
export function openApiDocument(ops: readonly Op[], version: string): Record<string, unknown> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(COMPONENTS)) registry.add(schema, { id });
  registry.add(AccessErrorReply, { id: 'AccessErrorReply' });
  registry.add(ErrorReply, { id: 'ErrorReply' });
  const replies = REPLIES as Record<string, z.ZodObject | undefined>;
  for (const o of ops) {
    const reply = replies[o.name];
    if (reply) registry.add(reply.extend({ ok: z.literal(true) }), { id: replyId(o.name) });
  }
  const { schemas } = z.toJSONSchema(registry, {
    uri: (id) => `#/components/schemas/${id}`,
    io: 'output',
    unrepresentable: 'any',
  });
  // Component schemas are plain OpenAPI schema objects: no dialect or id of their own.
  for (const s of Object.values(schemas)) {
    delete s.$schema;
    delete s.$id;
  }
  const errors = { oneOf: [ref('AccessErrorReply'), ref('ErrorReply')] };
  const paths: Record<string, unknown> = {};
  for (const o of ops) {
    const known = replies[o.name] !== undefined;
    paths[`/v1/${o.name}`] = {
      post: {
        operationId: o.name.replace(/\//g, '_'),
        summary: o.summary,
        security: [{ bearer: [] }],
        requestBody: {
          required: false,
          content: json(z.toJSONSchema(o.input, { io: 'input', unrepresentable: 'any' })),
        },
        responses: {
          '200': {
            description: 'ok: true and the result',
            ...(known ? { content: json(ref(replyId(o.name))) } : {}),
          },
          default: {
            description:
              'an error: `{ok: false, error: {code, message}}` for unauthorized, forbidden and not_found, else `{ok: false, error, code, details?}`',
            content: json(errors),
          },
        },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'svc hub API', version },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, schemas },
    paths,
  };
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../shared/errors.js';
import { requireDaemon } from '../access/access.service.js';
import { authenticate } from '../auth/authenticate.js';
import type { Hub } from '../context.js';
import { errorBody } from '../http/errors.js';
import {
  type Artifacts,
  readableArtifact,
  receiveUpload,
  type UploadKey,
  uploadStatus,
} from './artifacts.service.js';
import { servedInline } from './content-type.js';

/**
 * The artifacts' HTTP routes beside the operations (CONTRACT.md §13; docs/api.md "Artifacts"):
 *   GET  /v1/artifacts/<id>          the bytes, to whoever may view the run (Range, ETag)
 *   GET  /v1/artifact-uploads?…      a daemon asks how many bytes of an upload the hub has
 *   PUT  /v1/artifact-uploads?…      a daemon sends bytes from `offset` (raw body, streamed)
 */

export const ArtifactName = z
  .string()
  .min(1)
  .max(500)
  .refine(
    (n) => !n.startsWith('/') && n.split('/').every((p) => p !== '' && p !== '.' && p !== '..'),
    'must be a relative path without . or .. parts',
  )
  .refine(
    (n) => [...n].every((ch) => ch.charCodeAt(0) >= 0x20 && ch !== '\\'),
    'must not hold control characters or backslashes',
  );

const uploadQuery = z.object({
  run_id: z.string().min(1).max(100),
  phase: z.string().min(1).max(200),
  name: ArtifactName,
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be a lower-case hex SHA-256'),
  size: z.coerce.number().int().min(0),
});
const putQuery = uploadQuery.extend({ offset: z.coerce.number().int().min(0) });
const idParams = z.object({ id: z.string().min(1).max(100) });

export function registerArtifactRoutes(app: FastifyInstance, hub: Hub, artifacts: Artifacts): void {
  void app.register(async (scope) => {
    // Raw bodies of any type: the upload handler streams them to disk; nothing is parsed or buffered.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));

    scope.get('/v1/artifact-uploads', async (req) => {
      const k: UploadKey = uploadQuery.parse(req.query);
      const daemon = requireDaemon(await authenticate(hub, req.headers.authorization));
      return { ok: true, data: await uploadStatus(hub, artifacts, daemon, k) };
    });

    scope.put('/v1/artifact-uploads', async (req) => {
      const { offset, ...k } = putQuery.parse(req.query);
      const daemon = requireDaemon(await authenticate(hub, req.headers.authorization));
      return { ok: true, data: await receiveUpload(hub, artifacts, daemon, k, offset, req.raw) };
    });

    scope.get('/v1/artifacts/:id', async (req, reply) => {
      const { id } = idParams.parse(req.params);
      const row = await readableArtifact(hub, await authenticate(hub, req.headers.authorization), id);
      return serve(req, reply, artifacts, row);
    });
  });
}

/** A byte range of a `size`-byte file from a `Range` header: null when absent, 'bad' when unsatisfiable. */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | null | 'bad' {
  if (header === undefined) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'bad';
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'bad';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'bad';
  return { start, end };
}

async function serve(
  req: FastifyRequest,
  reply: FastifyReply,
  artifacts: Artifacts,
  row: { sha256: string; size: number; content_type: string; name: string },
) {
  const size = Number(row.size);
  const etag = `"${row.sha256}"`;
  void reply
    .header('etag', etag)
    .header('accept-ranges', 'bytes')
    .header('cache-control', 'private, no-cache')
    .header('x-content-type-options', 'nosniff')
    // The bytes are the agent's: a browser may show text and raster images, nothing it would run.
    .header(
      'content-security-policy',
      "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox",
    )
    .header(
      'content-disposition',
      `${servedInline(row.content_type) ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(
        row.name.split('/').pop()!,
      )}`,
    );
  const inm = req.headers['if-none-match'];
  if (inm?.split(',').some((t) => t.trim() === etag || t.trim() === '*')) {
    return reply.status(304).send();
  }
  const range = parseRange(req.headers.range, size);
  if (range === 'bad') {
    void reply.header('content-range', `bytes */${size}`);
    return reply
      .status(416)
      .send(
        errorBody(
          new AppError('bad_request', `the range ${req.headers.range} is not within the ${size} bytes`),
        ),
      );
  }
  if (!(await artifacts.store.stat(row.sha256))) {
    throw new AppError('not_found', 'the artifact file is missing from the store');
  }
  void reply.type(row.content_type);
  if (range) {
    void reply
      .status(206)
      .header('content-range', `bytes ${range.start}-${range.end}/${size}`)
      .header('content-length', String(range.end - range.start + 1));
    return reply.send(artifacts.store.get(row.sha256, range));
  }
  void reply.header('content-length', String(size));
  return reply.send(size === 0 ? '' : artifacts.store.get(row.sha256));
}

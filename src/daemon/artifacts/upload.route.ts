import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import type { Caller } from '../caller.js';
import { DaemonError } from '../errors.js';
import { ROUTE_ACCESS, routeRefusal } from '../route-access.js';
import { payloadIssues } from '../router.js';
import { PARTIAL_PREFIX } from './uploader.js';

/**
 * `POST /v1/artifacts/upload?run_id=…&name=…` (CONTRACT.md §13): an agent saves an artifact by
 * sending its bytes (any content type). They are streamed into the artifact folder of the run's
 * phase running now, never held in memory, and refused with PAYLOAD_TOO_LARGE (413) as soon as
 * they pass `artifacts.max_bytes`; the file goes to the hub with the folder's others after the phase.
 */
export const UPLOAD_PATH = 'artifacts/upload';

const Query = z.object({
  run_id: z.string().min(1).max(100),
  name: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[A-Za-z0-9_][A-Za-z0-9._ -]*$/, 'must be a file name: letters, digits, . _ - and spaces, no /')
    .refine((n) => !n.startsWith(PARTIAL_PREFIX)),
});

export interface UploadDeps {
  maxBytes: number;
  /** The artifact folder of the run's agent phase running now, or null. */
  folderOf(runId: string): string | null;
}

export async function receiveArtifact(
  deps: UploadDeps,
  caller: Caller,
  query: unknown,
  req: IncomingMessage,
): Promise<{ name: string; size: number; sha256: string }> {
  const refused = routeRefusal(ROUTE_ACCESS[UPLOAD_PATH]!, caller);
  if (refused) throw refused;
  const parsed = Query.safeParse(query);
  if (!parsed.success) {
    throw new DaemonError(
      'PAYLOAD_INVALID',
      'the query does not match the schema',
      payloadIssues(parsed.error),
    );
  }
  const { run_id, name } = parsed.data;
  const dir = deps.folderOf(run_id);
  if (!dir) throw new DaemonError('NOT_FOUND', `no agent phase of run ${run_id} is running on this daemon`);
  const tooLarge = () =>
    new DaemonError(
      'PAYLOAD_TOO_LARGE',
      `the artifact is larger than artifacts.max_bytes (${deps.maxBytes} bytes)`,
      {
        max_bytes: deps.maxBytes,
      },
    );
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > deps.maxBytes) throw tooLarge();
  const hash = createHash('sha256');
  let size = 0;
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (size > deps.maxBytes) return done(tooLarge());
      hash.update(chunk);
      done(null, chunk);
    },
  });
  const tmp = path.join(dir, `${PARTIAL_PREFIX}${randomUUID()}`);
  try {
    await pipeline(req, count, createWriteStream(tmp, { mode: 0o600 }));
    await rename(tmp, path.join(dir, name));
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return { name, size, sha256: hash.digest('hex') };
}

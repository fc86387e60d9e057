import { z } from 'zod';
import { id, op } from '../http/op.js';
import { listArtifacts } from './artifacts.service.js';

/** Artifacts of runs (CONTRACT.md §13); the bytes are served by artifacts.http.ts. */
export const artifactOps = [
  op({
    name: 'artifacts/list',
    summary: 'The artifacts the phases of a run saved, oldest first; the bytes: GET /v1/artifacts/<id>.',
    input: z.object({ run_id: id }),
    async handler(ctx, input) {
      return { data: await listArtifacts(ctx, ctx.actor, input.run_id) };
    },
  }),
];

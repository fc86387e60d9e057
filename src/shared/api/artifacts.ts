import { z } from 'zod';
import { ms } from './envelope.js';

/** A file a run's phase saved (CONTRACT.md §13); its bytes: `GET /v1/artifacts/<id>`. */
export const Artifact = z.strictObject({
  id: z.string(),
  run_id: z.string(),
  phase: z.string(),
  name: z.string(),
  size: z.number(),
  sha256: z.string(),
  content_type: z.string(),
  created_at: ms,
});
export type Artifact = z.infer<typeof Artifact>;

/** Where an upload of one artifact by its daemon stands: bytes the hub has, and the artifact once whole. */
export const ArtifactUpload = z.strictObject({
  offset: z.number(),
  artifact: Artifact.nullable(),
});
export type ArtifactUpload = z.infer<typeof ArtifactUpload>;

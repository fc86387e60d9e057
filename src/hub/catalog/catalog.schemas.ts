import { z } from 'zod';
import { cursor, id, limit } from '../http/op.js';

/** An agent manifest or team definition: a YAML or JSON string, or an object. */
export const documentInput = z.union(
  [
    z
      .string()
      .min(1, 'must not be empty')
      .max(5 * 1024 * 1024),
    z.record(z.string(), z.unknown()),
  ],
  'must be a YAML or JSON string, or an object',
);

/** Fields every versioned registration takes besides its document. */
export const registerFields = {
  org_id: id,
  name: z.string().min(1, 'must not be empty').max(100).optional(),
  version: z.string().min(1, 'must not be empty').max(100).optional(),
  force: z.boolean().optional(),
};

/** agents/list and teams/list: an org's entries, optionally of one name. */
export const listInput = z.object({ org_id: id, name: z.string().min(1).optional(), limit, cursor });

/** agents/get and teams/get: by id, or by org and name with an optional version (default: newest). */
export const getInput = z.union([
  z.object({ id }),
  z.object({ org_id: id, name: z.string().min(1), version: z.string().min(1).optional() }),
]);

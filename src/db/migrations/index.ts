import type { Migration } from 'kysely';
import * as m0001 from './0001_foundation.js';

/** Every migration, in order. Names sort lexically; append, never edit a released one. */
export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
};

import type { Migration } from 'kysely';
import * as m0001 from './0001_foundation.js';
import * as m0002 from './0002_tunnel.js';
import * as m0003 from './0003_catalog.js';

/** Every migration, in order. Names sort lexically; append, never edit a released one. */
export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_tunnel': m0002,
  '0003_catalog': m0003,
};

import type { DaemonsTable } from '../../db/schema.js';

export const daemonOut = (d: DaemonsTable) => ({
  id: d.id,
  realm_id: d.realm_id,
  name: d.name,
  status: d.status,
  last_seen_at: d.last_seen_at,
  created_at: d.created_at,
});

import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { RunAgentManifest } from '../../shared/protocol.js';
import type { Cipher } from '../ports.js';

export { SEALED_SECRETS_FIELD } from '../ports.js';

import { sealedSecretsFor } from './secrets.repo.js';

/**
 * The secrets a run's agents name, resolved in the run's realm: a realm secret shadows the
 * organization's secret of the same name; a name set in neither is left out (the daemon fails the
 * phase that needs it, naming it, before its agent starts). Answers them as one sealed value for
 * the execute command, which waits in the outbox (a database table) until the tunnel sends it:
 * the tunnel opens it just before the frame leaves. Null when no agent names a secret.
 */
export async function sealedRunSecrets(
  db: Kysely<DB>,
  cipher: Cipher,
  run: { realm_id: string; org_id: string },
  agents: Record<string, RunAgentManifest>,
): Promise<string | null> {
  const names = [...new Set(Object.values(agents).flatMap((a) => a.secrets ?? []))];
  if (names.length === 0) return null;
  const rows = await sealedSecretsFor(db, { realmId: run.realm_id, orgId: run.org_id }, names);
  const values: Record<string, string> = {};
  // Organization values first, then the realm's over them.
  for (const r of [...rows].sort((a, b) => Number(a.realm_id !== null) - Number(b.realm_id !== null))) {
    values[r.name] = cipher.open(r.value);
  }
  return cipher.seal(JSON.stringify(values));
}

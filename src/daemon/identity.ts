import { importJWK, type JWK } from 'jose';
import type { Kysely } from 'kysely';
import type { RealmRole } from '../shared/permissions.js';
import type { AclEntry, HelloFrame } from '../shared/protocol.js';
import type { DaemonDB } from './db/schema.js';

type VerifyKey = Awaited<ReturnType<typeof importJWK>>;

/**
 * Who this daemon is, as the hub told it in `hello`: its id, realm, the key that verifies dispatch
 * tokens (all persisted in the `state` table, so they survive a restart) and the realm ACL (kept in
 * memory only: until the hub sends it again, `svc_tok_` callers are refused with FORBIDDEN).
 */
export class DaemonIdentity {
  daemonId: string | null = null;
  realmId: string | null = null;
  hubUrl: string | null = null;
  dispatchJwk: JWK | null = null;
  dispatchKey: VerifyKey | null = null;
  /** The realm ACL from the hub; null until a `hello` of this process's lifetime. */
  acl: AclEntry[] | null = null;

  private constructor(private readonly db: Kysely<DaemonDB>) {}

  static async load(db: Kysely<DaemonDB>): Promise<DaemonIdentity> {
    const id = new DaemonIdentity(db);
    const rows = await db.selectFrom('state').select(['key', 'value']).execute();
    const state = new Map(rows.map((r) => [r.key, r.value]));
    id.daemonId = state.get('daemon_id') ?? null;
    id.realmId = state.get('realm_id') ?? null;
    id.hubUrl = state.get('hub_url') ?? null;
    const jwk = state.get('dispatch_key');
    if (jwk) await id.setDispatchKey(JSON.parse(jwk) as JWK);
    return id;
  }

  /** Persists what a `hello` frame says and loads the ACL. */
  async applyHello(hello: HelloFrame, hubUrl: string, now: number): Promise<void> {
    const jwk = hello.dispatch_key as JWK;
    await this.setDispatchKey(jwk);
    const entries: Record<string, string> = {
      daemon_id: hello.daemon_id,
      realm_id: hello.realm_id,
      hub_url: hubUrl,
      dispatch_key: JSON.stringify(jwk),
    };
    await this.db.transaction().execute(async (trx) => {
      for (const [key, value] of Object.entries(entries)) {
        await trx
          .insertInto('state')
          .values({ key, value, updated_at: now })
          .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: now }))
          .execute();
      }
    });
    this.daemonId = hello.daemon_id;
    this.realmId = hello.realm_id;
    this.hubUrl = hubUrl;
    this.acl = hello.acl;
  }

  setAcl(acl: AclEntry[]): void {
    this.acl = acl;
  }

  /** Whether `userId` is in the realm ACL (null when it is not loaded) and their role in it. */
  membership(userId: string): { inAcl: boolean | null; role: RealmRole | null } {
    if (!this.acl) return { inAcl: null, role: null };
    const entry = this.acl.find((e) => e.user_id === userId);
    return { inAcl: entry !== undefined, role: entry?.role ?? null };
  }

  private async setDispatchKey(jwk: JWK): Promise<void> {
    const alg = jwk.alg ?? (jwk.kty === 'OKP' ? 'EdDSA' : 'ES256');
    this.dispatchKey = await importJWK(jwk, alg);
    this.dispatchJwk = jwk;
  }
}

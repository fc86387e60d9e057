/**
 * The organization and realm the pages show, chosen in the header and remembered for the tab. The
 * caller's role in the realm comes from `realms/get` (`my_role`), the API's own answer.
 */
import { type ComponentChildren, createContext } from 'preact';
import { useContext, useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError, api, listAll } from './api.js';
import { orgAdmin, roleAtLeast } from './permissions.js';
import type { Org, OrgMember, OrgRole, Realm, RealmRole, User } from './types.js';

export interface Scope {
  orgs: Org[] | undefined;
  org: Org | null;
  realms: Realm[] | undefined;
  realm: Realm | null;
  role: RealmRole | null;
  /** The caller's role in the organization (`orgs/list_members`); a site administrator counts as admin. */
  orgRole: OrgRole | null;
  user: User;
  /** Load the realm's `my_role` again (after the caller changed members). */
  reloadRole(): void;
  setOrg(id: string): void;
  setRealm(id: string): void;
  error: string | null;
}

const ScopeContext = createContext<Scope | null>(null);

/** A failed read of the chosen realm (and the caller's role in it) is tried again this much later. */
const REALM_RETRY_MS = 2_000;

export function useScope(): Scope {
  const s = useContext(ScopeContext);
  if (!s) throw new Error('useScope outside ScopeProvider');
  return s;
}

const remember = (key: string, value: string) => {
  try {
    sessionStorage.setItem(key, value);
  } catch {
    // storage refused (private mode): the choice lasts until reload
  }
};
const recall = (key: string): string | null => {
  try {
    return sessionStorage.getItem(key);
  } catch {
    return null;
  }
};

export function ScopeProvider({ user, children }: { user: User; children: ComponentChildren }) {
  const [orgs, setOrgs] = useState<Org[] | undefined>(undefined);
  const [orgId, setOrgId] = useState<string | null>(recall('svc.console.org'));
  const [realms, setRealms] = useState<Realm[] | undefined>(undefined);
  const [realmId, setRealmId] = useState<string | null>(recall('svc.console.realm'));
  const [realm, setRealmFull] = useState<Realm | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [orgRole, setOrgRole] = useState<OrgRole | null>(null);
  const [roleGen, setRoleGen] = useState(0);

  useEffect(() => {
    listAll<'orgs/list', Org>('orgs/list', {}).then(
      (list) => {
        setOrgs(list);
        setOrgId((cur) => (cur && list.some((o) => o.id === cur) ? cur : (list[0]?.id ?? null)));
      },
      (err: Error) => setError(err.message),
    );
  }, []);

  useEffect(() => {
    if (!orgId) return;
    setRealms(undefined);
    let stale = false;
    listAll<'realms/list', Realm>('realms/list', { org_id: orgId }).then(
      (list) => {
        if (stale) return;
        setRealms(list);
        setRealmId((cur) => {
          if (cur && list.some((r) => r.id === cur)) return cur;
          return (list.find((r) => r.name === 'default') ?? list[0])?.id ?? null;
        });
      },
      (err: Error) => !stale && setError(err.message),
    );
    return () => {
      stale = true;
    };
  }, [orgId]);

  useEffect(() => {
    setOrgRole(null);
    if (!orgId) return;
    let stale = false;
    listAll<'orgs/list_members', OrgMember>('orgs/list_members', { org_id: orgId }).then(
      (list) => {
        if (stale) return;
        const mine = list.find((m) => m.user.id === user.id)?.role ?? null;
        setOrgRole(mine ?? (user.is_site_admin ? 'admin' : null));
      },
      () => !stale && setOrgRole(user.is_site_admin ? 'admin' : null),
    );
    return () => {
      stale = true;
    };
  }, [orgId, user.id, user.is_site_admin, roleGen]);

  useEffect(() => {
    if (!realmId) return setRealmFull(null);
    let stale = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    // The caller's role comes with it: a read that failed (the hub restarting, a dropped connection)
    // is tried again, or the page would offer no role's controls until a reload.
    const load = () =>
      api('realms/get', { id: realmId }).then(
        (r) => !stale && setRealmFull(r.data),
        (err: unknown) => {
          if (stale) return;
          setRealmFull(null);
          if (!(err instanceof ApiError) || err.status === 0 || err.status >= 500)
            retry = setTimeout(load, REALM_RETRY_MS);
        },
      );
    void load();
    return () => {
      stale = true;
      clearTimeout(retry);
    };
  }, [realmId, roleGen]);

  const value = useMemo<Scope>(() => {
    const org = orgs?.find((o) => o.id === orgId) ?? null;
    const listed = realms?.find((r) => r.id === realmId) ?? null;
    const full = realm && realm.id === realmId ? realm : null;
    return {
      orgs,
      org,
      realms,
      realm: full ?? listed,
      role: full?.my_role ?? null,
      orgRole,
      user,
      reloadRole: () => setRoleGen((n) => n + 1),
      error,
      setOrg(id) {
        remember('svc.console.org', id);
        setOrgId(id);
      },
      setRealm(id) {
        remember('svc.console.realm', id);
        setRealmId(id);
      },
    };
  }, [orgs, orgId, realms, realmId, realm, error, orgRole, user]);

  return <ScopeContext.Provider value={value}>{children}</ScopeContext.Provider>;
}

/** The header's organization and realm pickers. */
export function ScopePicker() {
  const s = useScope();
  return (
    <div class="scope">
      <label>
        <span>Org</span>
        <select
          value={s.org?.id ?? ''}
          disabled={!s.orgs}
          onChange={(e) => s.setOrg((e.target as HTMLSelectElement).value)}
        >
          {!s.orgs ? <option value="">…</option> : null}
          {s.orgs?.map((o) => (
            <option key={o.id} value={o.id}>
              {o.display_name || o.slug}
            </option>
          ))}
        </select>
      </label>
      <label>
        <span>Realm</span>
        <select
          value={s.realm?.id ?? ''}
          disabled={!s.realms}
          onChange={(e) => s.setRealm((e.target as HTMLSelectElement).value)}
        >
          {!s.realms ? <option value="">…</option> : null}
          {s.realms?.map((r) => (
            <option key={r.id} value={r.id}>
              {r.name}
            </option>
          ))}
        </select>
      </label>
      <span class="role" title="your role in this realm">
        {s.role ?? ''}
      </span>
    </div>
  );
}

/** Where a new channel or rule may live, as far as the caller's roles allow. */
export function scopeOptions(s: Scope, realmNeeds: 'operator' | 'admin', personal: boolean) {
  const out: { value: string; label: string }[] = [];
  if (s.realm && roleAtLeast(s.role, realmNeeds))
    out.push({ value: 'realm', label: `Realm ${s.realm.name}` });
  if (s.org && orgAdmin(s.orgRole))
    out.push({ value: 'org', label: `Organization ${s.org.display_name || s.org.slug}` });
  if (personal && out.length) out.push({ value: 'me', label: 'Only me (personal)' });
  return out;
}

/** The scope field's value as the API's `realm_id` / `org_id` (neither: personal). */
export function scopeBody(s: Scope, v: unknown): { realm_id?: string; org_id?: string } {
  if (v === 'realm' && s.realm) return { realm_id: s.realm.id };
  if (v === 'org' && s.org) return { org_id: s.org.id };
  return {};
}

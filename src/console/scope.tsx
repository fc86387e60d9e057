/**
 * The organization and realm the pages show, chosen in the header and remembered for the tab. The
 * caller's role in the realm comes from `realms/get` (`my_role`), the API's own answer.
 */
import { type ComponentChildren, createContext } from 'preact';
import { useContext, useEffect, useMemo, useState } from 'preact/hooks';
import { api, listAll } from './api.js';
import type { Org, Realm, RealmRole } from './types.js';

export interface Scope {
  orgs: Org[] | undefined;
  org: Org | null;
  realms: Realm[] | undefined;
  realm: Realm | null;
  role: RealmRole | null;
  setOrg(id: string): void;
  setRealm(id: string): void;
  error: string | null;
}

const ScopeContext = createContext<Scope | null>(null);

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

export function ScopeProvider({ children }: { children: ComponentChildren }) {
  const [orgs, setOrgs] = useState<Org[] | undefined>(undefined);
  const [orgId, setOrgId] = useState<string | null>(recall('svc.console.org'));
  const [realms, setRealms] = useState<Realm[] | undefined>(undefined);
  const [realmId, setRealmId] = useState<string | null>(recall('svc.console.realm'));
  const [realm, setRealmFull] = useState<Realm | null>(null);
  const [error, setError] = useState<string | null>(null);

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
    if (!realmId) return setRealmFull(null);
    let stale = false;
    api('realms/get', { id: realmId }).then(
      (r) => !stale && setRealmFull(r.data),
      () => !stale && setRealmFull(null),
    );
    return () => {
      stale = true;
    };
  }, [realmId]);

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
  }, [orgs, orgId, realms, realmId, realm, error]);

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

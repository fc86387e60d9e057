import { useState } from 'preact/hooks';
import { api, listAll } from '../api.js';
import { confirmRemove, FormDialog, type FormSpec, ShownOnce, text } from '../form.js';
import { useLive, useNow } from '../live.js';
import { orgAdmin, roleAtLeast } from '../permissions.js';
import { useScope } from '../scope.js';
import type { Daemon, OrgMember, RealmMember } from '../types.js';
import { Ago, ErrorNote, PageTitle, SkeletonRows } from '../ui.js';

const ORG_ROLES = [
  { value: 'member', label: 'member' },
  { value: 'admin', label: 'admin' },
];
const REALM_ROLES = [
  { value: 'member', label: 'member (views runs)' },
  { value: 'operator', label: 'operator (starts and controls runs)' },
  { value: 'admin', label: 'admin (manages the realm)' },
];

/**
 * The organization's people (org admins invite, change roles, remove) and the realm's members (realm
 * admins add people of the organization, change their role, remove them).
 */
export function MembersPage() {
  const scope = useScope();
  const { org, realm } = scope;
  const now = useNow(30_000);
  const [dialog, setDialog] = useState<FormSpec | null>(null);
  const people = useLive(
    async () =>
      org ? listAll<'orgs/list_members', OrgMember>('orgs/list_members', { org_id: org.id }) : null,
    [org?.id],
    10_000,
  );
  const members = useLive(
    async () =>
      realm
        ? listAll<'realms/list_members', RealmMember>('realms/list_members', { realm_id: realm.id })
        : null,
    [realm?.id],
    10_000,
  );
  const daemons = useLive(
    async () => (realm ? listAll<'daemons/list', Daemon>('daemons/list', { realm_id: realm.id }) : null),
    [realm?.id],
    null,
  );
  const manageOrg = orgAdmin(scope.orgRole);
  const manageRealm = roleAtLeast(scope.role, 'admin');
  const names = new Map<string, string>([
    ...(people.data ?? []).map((p) => [p.user.id, p.user.handle] as const),
    ...(daemons.data ?? []).map((d) => [d.id, d.name] as const),
  ]);
  const changed = () => {
    people.refresh();
    members.refresh();
    scope.reloadRole();
  };

  const invite = (): FormSpec => ({
    title: 'Invite to the organization',
    fields: [
      { name: 'email', label: 'E-mail', type: 'email', required: true },
      { name: 'role', label: 'Role', type: 'select', options: ORG_ROLES, value: 'member' },
    ],
    submit: 'Invite',
    async onSubmit(v) {
      if (!org) return undefined;
      const inv = (
        await api('orgs/invite_member', {
          org_id: org.id,
          email: text(v.email),
          role: text(v.role) as 'member',
        })
      ).data;
      changed();
      return (
        <>
          <p>
            {inv.email} is invited as {inv.role}
            {inv.email_sent ? '; the invitation was e-mailed.' : '.'}
          </p>
          {inv.code ? (
            <ShownOnce label="Invitation code" value={inv.code}>
              <p>They accept it with this code (it is valid for 7 days).</p>
            </ShownOnce>
          ) : null}
        </>
      );
    },
  });
  const orgRole = (m: OrgMember): FormSpec => ({
    title: `Role of ${m.user.handle} in the organization`,
    fields: [{ name: 'role', label: 'Role', type: 'select', options: ORG_ROLES, value: m.role }],
    submit: 'Save',
    async onSubmit(v) {
      if (!org) return undefined;
      await api('orgs/set_member_role', {
        org_id: org.id,
        user_id: m.user.id,
        role: text(v.role) as 'member',
      });
      changed();
      return undefined;
    },
  });
  const addToRealm = (): FormSpec => {
    const inRealm = new Set((members.data ?? []).map((m) => m.member_id));
    const options = (people.data ?? [])
      .filter((p) => !inRealm.has(p.user.id))
      .map((p) => ({ value: p.user.id, label: `${p.user.handle} (${p.user.email})` }));
    return {
      title: `Add to realm ${realm?.name ?? ''}`,
      fields: [
        { name: 'member_id', label: 'Person', type: 'select', options, value: options[0]?.value ?? '' },
        { name: 'role', label: 'Role', type: 'select', options: REALM_ROLES, value: 'member' },
      ],
      submit: 'Add',
      async onSubmit(v) {
        if (!realm) return undefined;
        await api('realms/add_member', {
          realm_id: realm.id,
          member_type: 'user',
          member_id: text(v.member_id),
          role: text(v.role) as 'member',
        });
        changed();
        return undefined;
      },
    };
  };
  const realmRole = (m: RealmMember, label: string): FormSpec => ({
    title: `Role of ${label} in realm ${realm?.name ?? ''}`,
    fields: [{ name: 'role', label: 'Role', type: 'select', options: REALM_ROLES, value: m.role }],
    submit: 'Save',
    async onSubmit(v) {
      await api('realms/set_member_role', {
        realm_id: m.realm_id,
        member_type: m.member_type,
        member_id: m.member_id,
        role: text(v.role) as 'member',
      });
      changed();
      return undefined;
    },
  });

  return (
    <>
      <PageTitle>Members</PageTitle>
      <FormDialog spec={dialog} onClose={() => setDialog(null)} />
      <section aria-labelledby="org-members-h">
        <div class="section-head">
          <h2 id="org-members-h">Organization {org ? org.display_name || org.slug : ''}</h2>
          {manageOrg ? (
            <button type="button" onClick={() => setDialog(invite())}>
              Invite person
            </button>
          ) : null}
        </div>
        <ErrorNote error={people.error} what="Could not load the organization's members" />
        <div class="table-wrap">
          <table class="members wide">
            <thead>
              <tr>
                <th scope="col">Person</th>
                <th scope="col">E-mail</th>
                <th scope="col">Role</th>
                <th scope="col">Since</th>
                {manageOrg ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {people.data === undefined ? <SkeletonRows rows={3} cols={manageOrg ? 5 : 4} /> : null}
              {people.data?.map((m) => (
                <tr key={m.user.id}>
                  <td>{m.user.handle}</td>
                  <td>{m.user.email}</td>
                  <td>{m.role}</td>
                  <td>
                    <Ago at={m.created_at} now={now} />
                  </td>
                  {manageOrg ? (
                    <td class="actions">
                      {m.role === 'owner' ? (
                        <span class="muted small">owner</span>
                      ) : (
                        <>
                          <button
                            type="button"
                            onClick={() => setDialog(orgRole(m))}
                            aria-label={`Change role of ${m.user.handle} in the organization`}
                          >
                            Change role
                          </button>
                          <button
                            type="button"
                            class="danger"
                            aria-label={`Remove ${m.user.handle} from the organization`}
                            onClick={() =>
                              setDialog(
                                confirmRemove(
                                  `${m.user.handle} from the organization`,
                                  async () => {
                                    if (org)
                                      await api('orgs/remove_member', { org_id: org.id, user_id: m.user.id });
                                    changed();
                                  },
                                  <p>
                                    This also removes them from every realm and group of the organization.
                                  </p>,
                                ),
                              )
                            }
                          >
                            Remove
                          </button>
                        </>
                      )}
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      <section aria-labelledby="realm-members-h">
        <div class="section-head">
          <h2 id="realm-members-h">Realm {realm?.name ?? ''}</h2>
          {manageRealm ? (
            <button type="button" onClick={() => setDialog(addToRealm())} disabled={!people.data}>
              Add to realm
            </button>
          ) : null}
        </div>
        <ErrorNote error={members.error} what="Could not load the realm's members" />
        <div class="table-wrap">
          <table class="realm-members wide">
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Kind</th>
                <th scope="col">Role</th>
                <th scope="col">Since</th>
                {manageRealm ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {members.data === undefined ? <SkeletonRows rows={3} cols={manageRealm ? 5 : 4} /> : null}
              {members.data?.map((m) => {
                const label = names.get(m.member_id) ?? m.member_id;
                return (
                  <tr key={`${m.member_type}:${m.member_id}`}>
                    <td>{label}</td>
                    <td>{m.member_type}</td>
                    <td>{m.role}</td>
                    <td>
                      <Ago at={m.created_at} now={now} />
                    </td>
                    {manageRealm ? (
                      <td class="actions">
                        <button
                          type="button"
                          onClick={() => setDialog(realmRole(m, label))}
                          aria-label={`Change role of ${label} in the realm`}
                        >
                          Change role
                        </button>
                        <button
                          type="button"
                          class="danger"
                          aria-label={`Remove ${label} from the realm`}
                          onClick={() =>
                            setDialog(
                              confirmRemove(`${label} from realm ${realm?.name ?? ''}`, async () => {
                                await api('realms/remove_member', {
                                  realm_id: m.realm_id,
                                  member_type: m.member_type,
                                  member_id: m.member_id,
                                });
                                changed();
                              }),
                            )
                          }
                        >
                          Remove
                        </button>
                      </td>
                    ) : null}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      </section>
    </>
  );
}

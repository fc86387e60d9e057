import { EVENT_KINDS } from '../../hub/notifications/kinds.js';
import { RUN_STATES } from '../../shared/api/run-states.js';
import { ApiError, api, listAll } from '../api.js';
import { confirmRemove, type FormSpec, given, text } from '../form.js';
import { humanize } from '../format.js';
import { useLive } from '../live.js';
import { canManageScoped } from '../permissions.js';
import { type Scope, scopeBody, scopeOptions, useScope } from '../scope.js';
import type { Channel, Rule } from '../types.js';
import { Empty, ErrorNote } from '../ui.js';

/**
 * The rules of the realm and of the organization (for its owners and admins): which events go to
 * which channels. The API has no update for a rule: editing makes the new rule, then removes the old.
 */
export function Rules({ channels, open }: { channels: Channel[]; open: (spec: FormSpec) => void }) {
  const scope = useScope();
  const { realm, org } = scope;
  const rules = useLive(
    async () => {
      if (!realm || !org) return null;
      const mine = await listAll<'realms/list_notification_rules', Rule>('realms/list_notification_rules', {
        realm_id: realm.id,
      });
      try {
        const ofOrg = await listAll<'realms/list_notification_rules', Rule>(
          'realms/list_notification_rules',
          {
            org_id: org.id,
          },
        );
        return [...mine, ...ofOrg];
      } catch (err) {
        if (err instanceof ApiError && err.code === 'forbidden') return mine;
        throw err;
      }
    },
    [realm?.id, org?.id],
    10_000,
  );
  const who = { role: scope.role, orgRole: scope.orgRole, userId: scope.user.id };
  const canManage = (r: Rule) => !r.locked && canManageScoped(r, who, 'operator');
  const canCreate = scopeOptions(scope, 'operator', false).length > 0 && channels.length > 0;
  const names = new Map(channels.map((c) => [c.id, c.name]));
  const edit = (r: Rule | null) => open(ruleForm(scope, channels, rules.refresh, r));
  const remove = (r: Rule) =>
    open(
      confirmRemove(`the rule for ${r.event}`, async () => {
        await api('realms/remove_notification_rules', { id: r.id });
        rules.refresh();
      }),
    );
  const list = rules.data;
  return (
    <section aria-labelledby="rules-h">
      <div class="section-head">
        <h2 id="rules-h">Rules</h2>
        {canCreate ? (
          <button type="button" onClick={() => edit(null)}>
            New rule
          </button>
        ) : null}
      </div>
      <ErrorNote error={rules.error} what="Could not load the rules" />
      {list?.length === 0 ? <Empty>No rules: no event is sent anywhere yet.</Empty> : null}
      {list?.length ? (
        <div class="table-wrap">
          <table class="rules wide">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Channels</th>
                <th scope="col">Only when</th>
                <th scope="col">Scope</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.map((r) => (
                <tr key={r.id}>
                  <td>
                    <code>{r.event}</code>
                  </td>
                  <td>{r.channel_ids.map((id) => names.get(id) ?? id).join(', ')}</td>
                  <td>
                    {[
                      r.filter?.state && `state ${humanize(r.filter.state)}`,
                      r.filter?.team_id && `team ${r.filter.team_id}`,
                    ]
                      .filter(Boolean)
                      .join(', ') || <span class="muted">always</span>}
                  </td>
                  <td>{r.realm_id ? 'realm' : 'organization'}</td>
                  <td class="actions">
                    {canManage(r) ? (
                      <>
                        <button type="button" onClick={() => edit(r)} aria-label={`Edit rule ${r.event}`}>
                          Edit
                        </button>
                        <button
                          type="button"
                          class="danger"
                          onClick={() => remove(r)}
                          aria-label={`Remove rule ${r.event}`}
                        >
                          Remove
                        </button>
                      </>
                    ) : r.locked ? (
                      <span class="muted small">locked</span>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

function ruleForm(s: Scope, channels: Channel[], done: () => void, r: Rule | null): FormSpec {
  const scopes = scopeOptions(s, 'operator', false);
  return {
    title: r ? `Edit rule for ${r.event}` : 'New notification rule',
    intro: r ? <p class="muted">Saving replaces the rule with a new one.</p> : undefined,
    fields: [
      {
        name: 'scope',
        label: 'Events of',
        type: 'select',
        options: scopes,
        value: r ? (r.realm_id ? 'realm' : 'org') : scopes[0]?.value,
      },
      {
        name: 'event',
        label: 'Event',
        type: 'select',
        options: EVENT_KINDS.map((e) => ({ value: e, label: e })),
        value: r?.event ?? 'run.ended',
      },
      {
        name: 'channel_ids',
        label: 'Send to',
        type: 'checks',
        options: channels.map((c) => ({ value: c.id, label: c.name })),
        value: r?.channel_ids ?? [],
      },
      {
        name: 'state',
        label: 'Only in state',
        type: 'select',
        options: [
          { value: '', label: 'any state' },
          ...RUN_STATES.map((st) => ({ value: st, label: humanize(st) })),
        ],
        value: r?.filter?.state ?? '',
      },
      {
        name: 'team_id',
        label: 'Only for team id',
        value: r?.filter?.team_id ?? '',
        help: 'Empty: every team.',
      },
    ],
    submit: r ? 'Save' : 'Create rule',
    async onSubmit(v) {
      const state = given(v.state) as (typeof RUN_STATES)[number] | undefined;
      const team = given(v.team_id);
      await api('realms/new_notification_rule', {
        ...scopeBody(s, v.scope),
        event: text(v.event) as (typeof EVENT_KINDS)[number],
        channel_ids: Array.isArray(v.channel_ids) ? v.channel_ids : [],
        ...(state || team
          ? { filter: { ...(state ? { state } : {}), ...(team ? { team_id: team } : {}) } }
          : {}),
      });
      if (r) await api('realms/remove_notification_rules', { id: r.id });
      done();
      return undefined;
    },
  };
}

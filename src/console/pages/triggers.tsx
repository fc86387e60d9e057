import { api, listAll } from '../api.js';
import { confirmRemove, type FormSpec, ShownOnce, text } from '../form.js';
import { formatTime, shortId } from '../format.js';
import { useLive } from '../live.js';
import { useScope } from '../scope.js';
import type { TeamVersion, Trigger } from '../types.js';
import { Empty, ErrorNote } from '../ui.js';

export const target = (x: { agent?: string; team?: string; team_id: string | null }) =>
  x.agent ? `agent ${x.agent}` : (x.team ?? shortId(x.team_id ?? ''));

/** The organization's team names, for the team pickers of schedules and triggers. */
export function useTeamNames(orgId: string | undefined): string[] {
  const teams = useLive(
    async () => (orgId ? listAll<'teams/list', TeamVersion>('teams/list', { org_id: orgId }) : null),
    [orgId],
    null,
  );
  return [...new Set((teams.data ?? []).map((t) => t.name))].sort();
}

export const teamField = (teams: string[], value: string | undefined) => ({
  name: 'team',
  label: 'Team',
  type: 'select' as const,
  options: teams.map((t) => ({ value: t, label: t })),
  value: value ?? teams[0] ?? '',
});

/** A hook URL as senders use it (the hub may answer a path). */
const absolute = (url: string) => (url.startsWith('/') ? `${location.origin}${url}` : url);

/** The realm's incoming webhooks: URL and newest deliveries; operators+ create, edit and remove. */
export function Triggers({
  teams,
  manage,
  open,
}: {
  teams: string[];
  manage: boolean;
  open: (spec: FormSpec) => void;
}) {
  const { realm } = useScope();
  const triggers = useLive(
    async () => {
      if (!realm) return null;
      const list = await listAll<'triggers/list', Trigger>('triggers/list', { realm_id: realm.id });
      return Promise.all(list.map(async (t) => (await api('triggers/get', { id: t.id })).data));
    },
    [realm?.id],
    5000,
  );
  const form = (t: Trigger | null): FormSpec => ({
    title: t ? `Edit trigger ${t.name}` : 'New trigger',
    fields: [
      { name: 'name', label: 'Name', required: true, value: t?.name ?? '' },
      teamField(teams, t?.team),
    ],
    submit: t ? 'Save' : 'Create trigger',
    async onSubmit(v) {
      const body = { name: text(v.name), team: text(v.team) };
      if (t) {
        await api('triggers/update', { id: t.id, ...body });
        triggers.refresh();
        return undefined;
      }
      if (!realm) return undefined;
      const made = (await api('triggers/new', { realm_id: realm.id, ...body })).data;
      triggers.refresh();
      return (
        <>
          <p>
            Senders POST JSON to <code class="path">{absolute(made.url)}</code>, signed with this secret (see
            the security guide, "Incoming webhooks").
          </p>
          <ShownOnce label="Signing secret" value={made.secret} />
        </>
      );
    },
  });
  return (
    <section aria-labelledby="triggers-h">
      <div class="section-head">
        <h2 id="triggers-h">Triggers</h2>
        {manage ? (
          <button type="button" onClick={() => open(form(null))}>
            New trigger
          </button>
        ) : null}
      </div>
      <ErrorNote error={triggers.error} what="Could not load the triggers" />
      {triggers.data?.length === 0 ? <Empty>No trigger in this realm.</Empty> : null}
      <div class="cards">
        {triggers.data?.map((t) => (
          <article class="card" key={t.id} aria-labelledby={`t-${t.id}`}>
            <header>
              <h3 id={`t-${t.id}`}>{t.name}</h3>
              <span class="muted">{target(t)}</span>
            </header>
            <p>
              <code class="path">{t.url}</code>
            </p>
            {t.recent_deliveries?.length ? (
              <ul class="plain">
                {t.recent_deliveries.slice(0, 5).map((d) => (
                  <li key={d.id}>
                    {formatTime(d.received_at)} · {d.outcome} (HTTP {d.http_status})
                    {d.run_id ? (
                      <>
                        {' '}
                        · <a href={`#/runs/${d.run_id}`}>run</a>
                      </>
                    ) : null}
                    {d.error ? <span class="muted"> · {d.error}</span> : null}
                  </li>
                ))}
              </ul>
            ) : (
              <p class="muted">no deliveries yet</p>
            )}
            {manage ? (
              <div class="buttons">
                <button type="button" onClick={() => open(form(t))} aria-label={`Edit trigger ${t.name}`}>
                  Edit
                </button>
                <button
                  type="button"
                  class="danger"
                  aria-label={`Remove trigger ${t.name}`}
                  onClick={() =>
                    open(
                      confirmRemove(`trigger ${t.name}`, async () => {
                        await api('triggers/remove', { id: t.id });
                        triggers.refresh();
                      }),
                    )
                  }
                >
                  Remove
                </button>
              </div>
            ) : null}
          </article>
        ))}
      </div>
    </section>
  );
}

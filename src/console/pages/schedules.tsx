import { useState } from 'preact/hooks';
import { api, listAll } from '../api.js';
import { formatTime, shortId } from '../format.js';
import { useLive } from '../live.js';
import { roleAtLeast } from '../permissions.js';
import { useScope } from '../scope.js';
import type { Schedule, Trigger } from '../types.js';
import { Empty, ErrorNote, PageTitle, SkeletonBlock } from '../ui.js';

/**
 * The realm's schedules (cron, next time, last run; realm operators+ enable, disable and run now)
 * and its triggers (URL and newest deliveries); every 5 s.
 */
export function SchedulesPage() {
  const { realm, role } = useScope();
  const [actionError, setActionError] = useState<string | null>(null);
  const manage = roleAtLeast(role, 'operator');
  const schedules = useLive(
    async () =>
      realm ? listAll<'schedules/list', Schedule>('schedules/list', { realm_id: realm.id }) : null,
    [realm?.id],
    5000,
  );
  const triggers = useLive(
    async () => {
      if (!realm) return null;
      const list = await listAll<'triggers/list', Trigger>('triggers/list', { realm_id: realm.id });
      return Promise.all(list.map(async (t) => (await api('triggers/get', { id: t.id })).data));
    },
    [realm?.id],
    5000,
  );
  const act = async (what: () => Promise<unknown>) => {
    setActionError(null);
    try {
      await what();
      schedules.refresh();
    } catch (err) {
      setActionError((err as Error).message);
    }
  };
  const target = (x: { agent?: string; team?: string; team_id: string | null }) =>
    x.agent ? `agent ${x.agent}` : (x.team ?? shortId(x.team_id ?? ''));
  return (
    <>
      <PageTitle>Schedules</PageTitle>
      <ErrorNote error={schedules.error} what="Could not load the schedules" />
      {actionError ? <p class="error">{actionError}</p> : null}
      {schedules.data === undefined ? <SkeletonBlock lines={4} /> : null}
      {schedules.data?.length === 0 ? (
        <Empty>
          No schedule in this realm. Make one with <code>svc schedules new '0 9 * * 1-5' --team NAME</code>.
        </Empty>
      ) : null}
      {schedules.data?.length ? (
        <table class="schedules">
          <thead>
            <tr>
              <th>Runs</th>
              <th>Cron</th>
              <th>Next</th>
              <th>Last run</th>
              <th>Enabled</th>
              {manage ? <th>Actions</th> : null}
            </tr>
          </thead>
          <tbody>
            {schedules.data.map((s) => (
              <tr key={s.id}>
                <td>{target(s)}</td>
                <td>
                  <code>{s.cron}</code> <span class="muted">{s.timezone}</span>
                </td>
                <td>{s.enabled ? formatTime(s.next_fire_at) : '—'}</td>
                <td>
                  {s.last_run_id ? (
                    <a href={`#/runs/${s.last_run_id}`}>{formatTime(s.last_fired_at)}</a>
                  ) : (
                    '—'
                  )}
                </td>
                <td>{s.enabled ? 'yes' : 'no'}</td>
                {manage ? (
                  <td>
                    <button
                      type="button"
                      onClick={() => act(() => api('schedules/update', { id: s.id, enabled: !s.enabled }))}
                    >
                      {s.enabled ? 'Disable' : 'Enable'}
                    </button>{' '}
                    <button type="button" onClick={() => act(() => api('schedules/trigger', { id: s.id }))}>
                      Run now
                    </button>
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <h2>Triggers</h2>
      <ErrorNote error={triggers.error} what="Could not load the triggers" />
      {triggers.data?.length === 0 ? (
        <Empty>
          No trigger in this realm. Make one with <code>svc triggers new NAME --team NAME</code>.
        </Empty>
      ) : null}
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
          </article>
        ))}
      </div>
    </>
  );
}

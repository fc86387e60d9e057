import { useState } from 'preact/hooks';
import { api, listAll } from '../api.js';
import { confirmRemove, FormDialog, type FormSpec, text } from '../form.js';
import { formatTime } from '../format.js';
import { useLive } from '../live.js';
import { roleAtLeast } from '../permissions.js';
import { useScope } from '../scope.js';
import type { Schedule } from '../types.js';
import { Empty, ErrorNote, PageTitle, SkeletonBlock } from '../ui.js';
import { Triggers, target, teamField, useTeamNames } from './triggers.js';

/**
 * The realm's schedules (cron, next time, last run; realm operators+ create, edit, enable, disable,
 * run now and remove) and its triggers; every 5 s.
 */
export function SchedulesPage() {
  const { realm, org, role } = useScope();
  const [actionError, setActionError] = useState<string | null>(null);
  const [dialog, setDialog] = useState<FormSpec | null>(null);
  const manage = roleAtLeast(role, 'operator');
  const teams = useTeamNames(org?.id);
  const schedules = useLive(
    async () =>
      realm ? listAll<'schedules/list', Schedule>('schedules/list', { realm_id: realm.id }) : null,
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
  const form = (s: Schedule | null): FormSpec => ({
    title: s ? 'Edit schedule' : 'New schedule',
    fields: [
      teamField(teams, s?.team),
      {
        name: 'cron',
        label: 'Cron',
        required: true,
        value: s?.cron ?? '',
        placeholder: '0 9 * * 1-5',
        help: 'minute hour day month weekday (or 6 fields with seconds first, or @daily)',
      },
      {
        name: 'timezone',
        label: 'Time zone',
        value: s?.timezone ?? 'UTC',
        help: 'An IANA name such as Europe/Paris.',
      },
      { name: 'enabled', label: 'Enabled', type: 'checkbox', value: s?.enabled ?? true },
    ],
    submit: s ? 'Save' : 'Create schedule',
    async onSubmit(v) {
      const body = {
        team: text(v.team),
        cron: text(v.cron),
        timezone: text(v.timezone) || 'UTC',
        enabled: v.enabled === true,
      };
      if (s) await api('schedules/update', { id: s.id, ...body });
      else if (realm) await api('schedules/new', { realm_id: realm.id, ...body });
      schedules.refresh();
      return undefined;
    },
  });
  return (
    <>
      <PageTitle
        aside={
          manage ? (
            <button type="button" class="primary" onClick={() => setDialog(form(null))}>
              New schedule
            </button>
          ) : null
        }
      >
        Schedules
      </PageTitle>
      <FormDialog spec={dialog} onClose={() => setDialog(null)} />
      <ErrorNote error={schedules.error} what="Could not load the schedules" />
      {actionError ? <p class="note error">{actionError}</p> : null}
      {schedules.data === undefined ? <SkeletonBlock lines={4} /> : null}
      {schedules.data?.length === 0 ? <Empty>No schedule in this realm.</Empty> : null}
      {schedules.data?.length ? (
        <div class="table-wrap">
          <table class="schedules wide">
            <thead>
              <tr>
                <th scope="col">Runs</th>
                <th scope="col">Cron</th>
                <th scope="col">Next</th>
                <th scope="col">Last run</th>
                <th scope="col">Enabled</th>
                {manage ? <th scope="col">Actions</th> : null}
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
                    <td class="actions">
                      <button
                        type="button"
                        onClick={() => act(() => api('schedules/update', { id: s.id, enabled: !s.enabled }))}
                      >
                        {s.enabled ? 'Disable' : 'Enable'}
                      </button>
                      <button type="button" onClick={() => act(() => api('schedules/trigger', { id: s.id }))}>
                        Run now
                      </button>
                      <button
                        type="button"
                        onClick={() => setDialog(form(s))}
                        aria-label={`Edit schedule ${s.cron}`}
                      >
                        Edit
                      </button>
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Remove schedule ${s.cron}`}
                        onClick={() =>
                          setDialog(
                            confirmRemove(`the schedule ${s.cron}`, async () => {
                              await api('schedules/remove', { id: s.id });
                              schedules.refresh();
                            }),
                          )
                        }
                      >
                        Remove
                      </button>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <Triggers teams={teams} manage={manage} open={setDialog} />
    </>
  );
}

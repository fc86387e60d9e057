import { useState } from 'preact/hooks';
import { ApiError, api, listAll } from '../api.js';
import { confirmRemove, type Field, FormDialog, type FormSpec, given, ShownOnce, text } from '../form.js';
import { formatDuration, humanize } from '../format.js';
import { useLive, useNow } from '../live.js';
import { canManageScoped } from '../permissions.js';
import { formatRoute } from '../router.js';
import { type Scope, scopeBody, scopeOptions, useScope } from '../scope.js';
import type { Channel } from '../types.js';
import { Ago, Empty, ErrorNote, PageTitle, SkeletonBlock, SkeletonRows } from '../ui.js';
import { Rules } from './rules.js';

const TYPES = [
  { value: 'webhook', label: 'Webhook (signed JSON)' },
  { value: 'slack', label: 'Slack incoming webhook' },
  { value: 'discord', label: 'Discord webhook' },
];

function channelForm(s: Scope, done: () => void, c: Channel | null): FormSpec {
  const scopes = scopeOptions(s, 'operator', true);
  const fields: Field[] = [
    ...(c
      ? []
      : [
          {
            name: 'scope',
            label: 'Belongs to',
            type: 'select' as const,
            options: scopes,
            value: scopes[0]?.value,
          },
        ]),
    { name: 'name', label: 'Name', required: true, value: c?.name ?? '' },
    {
      name: 'type',
      label: 'Destination type',
      type: 'select',
      options: TYPES,
      value: c?.destinations[0]?.type ?? 'webhook',
    },
    {
      name: 'webhook_url',
      label: 'Webhook URL',
      type: 'url',
      api: 'destinations',
      required: !c,
      placeholder: 'https://',
      help: c
        ? 'Webhook URLs are secrets and are not shown again. Leave empty to keep the current destinations; a URL replaces them.'
        : 'A secret: it is not shown again after saving.',
    },
    { name: 'enabled', label: 'Enabled', type: 'checkbox', value: c?.enabled ?? true },
  ];
  return {
    title: c ? `Edit channel ${c.name}` : 'New notification channel',
    fields,
    submit: c ? 'Save' : 'Create channel',
    async onSubmit(v) {
      const url = given(v.webhook_url);
      const destinations = url ? [{ type: text(v.type) as 'webhook', webhook_url: url }] : undefined;
      if (c) {
        await api('notification_channels/update', {
          id: c.id,
          name: text(v.name),
          enabled: v.enabled === true,
          ...(destinations ? { destinations } : {}),
        });
        done();
        return undefined;
      }
      const made = await api('notification_channels/new', {
        ...scopeBody(s, v.scope),
        name: text(v.name),
        destinations: destinations ?? [],
        enabled: v.enabled === true,
      });
      done();
      return (
        <ShownOnce label="Signing secret" value={made.data.secret}>
          <p>
            Channel <strong>{made.data.name}</strong> was created. Webhook receivers check the{' '}
            <code>X-Svc-Signature</code> header with this secret.
          </p>
        </ShownOnce>
      );
    },
  };
}

/**
 * Notification channels of the realm (and of the organization when the caller may see them), with the
 * delivery log of the selected one. Listing channels needs the rights to manage them (docs/api.md).
 */
export function ChannelsPage({ channel }: { channel: string | null }) {
  const scope = useScope();
  const { realm, org } = scope;
  const [dialog, setDialog] = useState<FormSpec | null>(null);
  const now = useNow(5000);
  const channels = useLive(
    async () => {
      if (!realm || !org) return null;
      const realmChannels = await listAll<'notification_channels/list', Channel>(
        'notification_channels/list',
        {
          realm_id: realm.id,
        },
      );
      let orgChannels: Channel[] = [];
      try {
        orgChannels = await listAll<'notification_channels/list', Channel>('notification_channels/list', {
          org_id: org.id,
        });
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 'forbidden')) throw err;
      }
      const seen = new Set<string>();
      return [...realmChannels, ...orgChannels].filter((c) => !seen.has(c.id) && seen.add(c.id));
    },
    [realm?.id, org?.id],
    10_000,
  );
  const forbidden = channels.error?.code === 'forbidden';
  const list = channels.data;
  const selected = list?.find((c) => c.id === channel) ?? null;
  const who = { role: scope.role, orgRole: scope.orgRole, userId: scope.user.id };
  const canManage = (c: Channel) => canManageScoped(c, who, 'operator');
  const anyActions = list?.some(canManage) ?? false;
  const canCreate = list !== undefined && scopeOptions(scope, 'operator', false).length > 0;
  const edit = (c: Channel | null) => setDialog(channelForm(scope, channels.refresh, c));
  const remove = (c: Channel) =>
    setDialog(
      confirmRemove(`channel ${c.name}`, async () => {
        await api('notification_channels/remove', { id: c.id });
        channels.refresh();
      }),
    );
  return (
    <>
      <PageTitle
        aside={
          canCreate ? (
            <button type="button" class="primary" onClick={() => edit(null)}>
              New channel
            </button>
          ) : null
        }
      >
        Notification channels
      </PageTitle>
      <FormDialog spec={dialog} onClose={() => setDialog(null)} />
      {forbidden ? (
        <p class="note">
          Seeing a realm's channels needs the operator role in it (their webhook URLs are secrets).
        </p>
      ) : (
        <ErrorNote error={channels.error} what="Could not load the channels" />
      )}
      {list === undefined && !channels.error ? <SkeletonBlock lines={4} /> : null}
      {list?.length === 0 ? (
        <Empty>
          No channels.{' '}
          {canCreate ? (
            'Add one with New channel.'
          ) : (
            <>
              Add one with <code>svc channels new</code>.
            </>
          )}
        </Empty>
      ) : null}
      {list?.length ? (
        <div class="table-wrap">
          <table class="channels wide">
            <thead>
              <tr>
                <th scope="col">Channel</th>
                <th scope="col">Scope</th>
                <th scope="col">Destinations</th>
                <th scope="col">Rules</th>
                <th scope="col">State</th>
                {anyActions ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {list.map((c) => (
                <tr key={c.id} class={c.id === channel ? 'selected' : ''}>
                  <td>
                    <a
                      href={formatRoute({ name: 'channels', channel: c.id })}
                      aria-current={c.id === channel ? 'true' : undefined}
                    >
                      {c.name}
                    </a>
                  </td>
                  <td>{c.realm_id ? 'realm' : c.org_id ? 'organization' : 'personal'}</td>
                  <td>
                    {c.destinations.length ? (
                      c.destinations.map((d) => d.type).join(', ')
                    ) : (
                      <span class="muted">none</span>
                    )}
                  </td>
                  <td class="num">{c.rule_count}</td>
                  <td>
                    <span class={`badge ${c.enabled ? 'status-online' : 'status-offline'}`}>
                      {c.enabled ? 'enabled' : 'disabled'}
                    </span>
                    {c.locked ? <span class="muted small"> locked</span> : null}
                    {c.lock_reason ? <div class="muted small">{c.lock_reason}</div> : null}
                  </td>
                  {anyActions ? (
                    <td class="actions">
                      {canManage(c) ? (
                        <>
                          <button type="button" onClick={() => edit(c)} aria-label={`Edit channel ${c.name}`}>
                            Edit
                          </button>
                          {c.locked ? null : (
                            <button
                              type="button"
                              class="danger"
                              onClick={() => remove(c)}
                              aria-label={`Remove channel ${c.name}`}
                            >
                              Remove
                            </button>
                          )}
                        </>
                      ) : null}
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {list ? <Rules channels={list} open={setDialog} /> : null}
      {selected ? (
        <Deliveries channel={selected} now={now} />
      ) : list?.length ? (
        <p class="muted">Choose a channel to see its delivery log.</p>
      ) : null}
    </>
  );
}

function Deliveries({ channel, now }: { channel: Channel; now: number }) {
  const log = useLive(
    (signal) => api('notifications/list_deliveries', { channel_id: channel.id, limit: 100 }, { signal }),
    [channel.id],
    5000,
  );
  const rows = log.data?.data;
  return (
    <section aria-labelledby="deliveries-h">
      <h2 id="deliveries-h">Delivery log of {channel.name}</h2>
      <ErrorNote error={log.error} what="Could not load the deliveries" />
      <div class="table-wrap">
        <table class="deliveries">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Event</th>
              <th scope="col">Destination</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                Attempts
              </th>
              <th scope="col">Last answer</th>
            </tr>
          </thead>
          <tbody>
            {rows === undefined ? <SkeletonRows rows={4} cols={6} /> : null}
            {rows?.map((d) => (
              <tr key={d.id}>
                <td>
                  <Ago at={d.created_at} now={now} />
                </td>
                <td>
                  {d.event_type}
                  {d.test ? <span class="muted"> (test)</span> : null}
                </td>
                <td>
                  {d.destination.type} #{d.destination.index + 1}
                </td>
                <td>
                  <span class={`badge delivery-${d.state}`}>{humanize(d.state)}</span>
                  {d.state === 'pending' && d.next_attempt_at ? (
                    <div class="muted small">
                      next <Ago at={d.next_attempt_at} now={now} />
                    </div>
                  ) : null}
                </td>
                <td class="num">{d.attempts}</td>
                <td>
                  {d.last_status_code !== null ? `HTTP ${d.last_status_code}` : ''}
                  {d.last_latency_ms !== null ? ` in ${formatDuration(d.last_latency_ms)}` : ''}
                  {d.last_error ? <div class="muted small">{d.last_error}</div> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rows?.length === 0 ? <Empty>Nothing was delivered through this channel yet.</Empty> : null}
    </section>
  );
}

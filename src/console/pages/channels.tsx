import { ApiError, api, listAll } from '../api.js';
import { formatDuration, humanize } from '../format.js';
import { useLive, useNow } from '../live.js';
import { formatRoute } from '../router.js';
import { useScope } from '../scope.js';
import type { Channel } from '../types.js';
import { Ago, Empty, ErrorNote, PageTitle, SkeletonBlock, SkeletonRows } from '../ui.js';

/**
 * Notification channels of the realm (and of the organization when the caller may see them), with the
 * delivery log of the selected one. Listing channels needs the rights to manage them (docs/api.md).
 */
export function ChannelsPage({ channel }: { channel: string | null }) {
  const { realm, org } = useScope();
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
  return (
    <>
      <PageTitle>Notification channels</PageTitle>
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
          No channels. Add one with <code>svc channels new</code>.
        </Empty>
      ) : null}
      {list?.length ? (
        <div class="table-wrap">
          <table class="channels">
            <thead>
              <tr>
                <th scope="col">Channel</th>
                <th scope="col">Scope</th>
                <th scope="col">Destinations</th>
                <th scope="col">Rules</th>
                <th scope="col">State</th>
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
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
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

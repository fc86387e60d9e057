import type { Kysely } from 'kysely';
import type { DB } from '../../db/index.js';
import type { NotificationChannelsTable, NotificationDeliveriesTable } from '../../db/schema.js';
import { parseDestinations } from './channels.repo.js';
import { withoutFormerMembers } from './members.js';
import { type EventEnvelope, formatBody } from './payloads.js';
import { type RulesCache, ruleMatches, uncachedRules } from './rules-cache.js';

/** Ids and times of new rows, and the hub's rules cache when there is one (rules-cache.ts). */
export type EventContext = { newId: () => string; now: () => number; rules?: Pick<RulesCache, 'rulesOf'> };

/** An event as recorded in `events` (the payload parsed). */
export interface RecordedEvent {
  id: string;
  type: string;
  org_id: string | null;
  realm_id: string | null;
  subject_id: string | null;
  payload: Record<string, unknown>;
  created_at: number;
}

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x !== '') : [];

export function envelopeOf(e: RecordedEvent): EventEnvelope {
  const { channel_ids: _omit, ...data } = e.payload;
  return {
    id: e.id,
    type: e.type,
    occurred_at: e.created_at,
    org_id: e.org_id,
    realm_id: e.realm_id,
    subject_id: e.subject_id,
    data,
  };
}

/**
 * The event bus → outbox step, run by `recordEvent` in the transaction of the change: finds the
 * enabled channels of the matching rules (event kind; the event's org, or its realm; the rule's
 * filter on `payload.team_id` / `payload.state`) plus the channels named in `payload.channel_ids`
 * (a run's `notify_channels`), and writes one delivery per (channel, destination). A personal
 * channel hears the organization's events only while its person is a member (or site admin).
 * Answers the ids of the events that got a delivery.
 */
export async function enqueueEventDeliveries(
  db: Kysely<DB>,
  ids: EventContext,
  events: readonly RecordedEvent[],
): Promise<Set<string>> {
  // Events alike (kind, organization, realm, team, state, named channels) reach the same channels:
  // looked up once for a batch of them.
  const found = new Map<string, NotificationChannelsTable[]>();
  const delivered = new Set<string>();
  for (const e of events) {
    const key = JSON.stringify([
      e.type,
      e.org_id,
      e.realm_id,
      e.payload.team_id,
      e.payload.state,
      e.payload.channel_ids,
    ]);
    let channels = found.get(key);
    if (!channels) {
      channels = await channelsOf(db, ids, e);
      found.set(key, channels);
    }
    if (channels.length === 0) continue;
    const env = envelopeOf(e);
    for (const c of channels)
      if ((await enqueueForChannel(db, ids, c, env, 'event')) > 0) delivered.add(e.id);
  }
  return delivered;
}

/** The enabled channels an event reaches (see enqueueEventDeliveries). */
async function channelsOf(
  db: Kysely<DB>,
  ids: EventContext,
  e: RecordedEvent,
): Promise<NotificationChannelsTable[]> {
  let orgId = e.org_id;
  if (!orgId && e.realm_id) {
    orgId =
      (await db.selectFrom('realms').select('org_id').where('id', '=', e.realm_id).executeTakeFirst())
        ?.org_id ?? null;
  }
  const extra = strings(e.payload.channel_ids);
  const channelIds = new Set<string>();
  if (orgId) {
    const teamId = typeof e.payload.team_id === 'string' ? e.payload.team_id : null;
    const state = typeof e.payload.state === 'string' ? e.payload.state : null;
    const event = { type: e.type, realm_id: e.realm_id, team_id: teamId, state };
    for (const rule of await (ids.rules ?? uncachedRules).rulesOf(db, orgId)) {
      if (ruleMatches(rule, event)) for (const id of rule.channel_ids) channelIds.add(id);
    }
  }
  let channels: NotificationChannelsTable[] = [];
  if (channelIds.size > 0) {
    channels = await db
      .selectFrom('notification_channels')
      .selectAll()
      .where('id', 'in', [...channelIds])
      .where('enabled', '=', 1)
      .execute();
  }
  if (extra.length > 0) {
    // Channels named by the event itself must belong to its realm or org, or be personal ones
    // (checked when they were attached, e.g. by runs/new).
    const named = await db
      .selectFrom('notification_channels')
      .selectAll()
      .where('id', 'in', extra)
      .where('enabled', '=', 1)
      .where((eb) =>
        eb.or([
          eb('scope', '=', 'personal'),
          ...(e.realm_id ? [eb.and([eb('scope', '=', 'realm'), eb('realm_id', '=', e.realm_id)])] : []),
          ...(orgId ? [eb.and([eb('scope', '=', 'org'), eb('org_id', '=', orgId)])] : []),
        ]),
      )
      .execute();
    for (const c of named) if (!channelIds.has(c.id)) channels.push(c);
  }
  if (orgId) channels = await withoutFormerMembers(db, orgId, channels);
  return channels;
}

/** One pending delivery per destination of the channel; the body is fixed now so retries resend the same bytes. */
export async function enqueueForChannel(
  db: Kysely<DB>,
  ids: EventContext,
  channel: NotificationChannelsTable,
  env: EventEnvelope,
  kind: NotificationDeliveriesTable['kind'],
): Promise<number> {
  const dests = parseDestinations(channel.destinations);
  if (dests.length === 0) return 0;
  const now = ids.now();
  const rows: NotificationDeliveriesTable[] = dests.map((d, i) => ({
    id: ids.newId(),
    channel_id: channel.id,
    event_id: env.id,
    event_type: env.type,
    kind,
    destination_index: i,
    destination_type: d.type,
    url: d.webhook_url,
    body: formatBody(d.type, env),
    state: 'pending',
    attempts: 0,
    next_attempt_at: now,
    lease_owner: null,
    lease_until: null,
    last_status_code: null,
    last_latency_ms: null,
    last_error: null,
    created_at: now,
    updated_at: now,
    completed_at: null,
  }));
  await db.insertInto('notification_deliveries').values(rows).execute();
  return rows.length;
}

import type { Kysely, KyselyPlugin } from 'kysely';
import type { DB } from '../../db/index.js';
import { clearOnWrite, keptAnswers } from '../../db/watch-writes.js';

/**
 * The notification rules of an organization, read once and kept for at most `ttlMs`: every event
 * (a run's history entry is one) asks which rules match it, and rules change seldom.
 *
 * Invalidation sits beside the cache, as for the access and catalog caches: the hub's database
 * handle carries `watch`, which clears it after any write to the rules or their channels, so a change
 * made through this process applies to its next event; one made through another hub process, within
 * `ttlMs` (one second). A read that began before a clear does not keep its answer. With
 * `renewThrough` (the hub's own handle), rules asked for past half their time are answered and read
 * again in the background, so that an organization's events do not wait for that read once a second.
 * Which channels are enabled, and who may still hear a personal channel, is read for each event that
 * matches, not cached.
 */
export interface RulesCache {
  /** The organization's rules with their channels (from `db`, the caller's transaction, on a miss). */
  rulesOf(db: Kysely<DB>, orgId: string): Promise<readonly OrgRule[]>;
  clear(): void;
  readonly watch: KyselyPlugin;
}

export interface OrgRule {
  event: string;
  realm_id: string | null;
  filter_team_id: string | null;
  filter_state: string | null;
  channel_ids: string[];
}

export const RULES_CACHE_MS = 1_000;
/** Organizations kept; a full cache starts again empty (a bound on memory, not an LRU). */
const MAX_ORGS = 10_000;

export function createRulesCache(
  ttlMs: number = RULES_CACHE_MS,
  clock: () => number = Date.now,
  renewThrough?: () => Kysely<DB>,
): RulesCache {
  const kept = keptAnswers(ttlMs, clock, MAX_ORGS);
  return {
    rulesOf: (db, orgId) =>
      kept.get(orgId, () => readRules(db, orgId), renewThrough && (() => readRules(renewThrough(), orgId))),
    clear: kept.clear,
    watch: clearOnWrite({ notification_rules: null, notification_rule_channels: null }, kept.clear),
  };
}

/** Reads every time: for callers without a hub (tools, tests of the outbox alone). */
export const uncachedRules: Pick<RulesCache, 'rulesOf'> = { rulesOf: readRules };

async function readRules(db: Kysely<DB>, orgId: string): Promise<OrgRule[]> {
  const rows = await db
    .selectFrom('notification_rules as r')
    .innerJoin('notification_rule_channels as rc', 'rc.rule_id', 'r.id')
    .select(['r.id', 'r.event', 'r.realm_id', 'r.filter_team_id', 'r.filter_state', 'rc.channel_id'])
    .where('r.org_id', '=', orgId)
    .orderBy('r.id')
    .execute();
  const byId = new Map<string, OrgRule>();
  for (const { id, channel_id, ...rule } of rows) {
    const r = byId.get(id) ?? { ...rule, channel_ids: [] };
    r.channel_ids.push(channel_id);
    byId.set(id, r);
  }
  return [...byId.values()];
}

/**
 * Whether a rule hears an event: its kind; the event's realm (a rule without one hears the whole
 * organization); the rule's filters on the event's team and state (an event without a team or state
 * is heard only by rules without that filter).
 */
export function ruleMatches(
  rule: OrgRule,
  e: { type: string; realm_id: string | null; team_id: string | null; state: string | null },
): boolean {
  return (
    rule.event === e.type &&
    (rule.realm_id === null || rule.realm_id === e.realm_id) &&
    (rule.filter_team_id === null || rule.filter_team_id === e.team_id) &&
    (rule.filter_state === null || rule.filter_state === e.state)
  );
}

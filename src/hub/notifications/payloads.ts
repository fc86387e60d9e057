import type { DestinationType } from './kinds.js';

/** What a `webhook` destination receives (and what Slack and Discord messages are made from). */
export interface EventEnvelope {
  id: string;
  type: string;
  occurred_at: number;
  org_id: string | null;
  realm_id: string | null;
  subject_id: string | null;
  data: Record<string, unknown>;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** One line a person reads: "Invitation sent to ann@example.com (member)". */
export function summarize(e: EventEnvelope): string {
  const d = e.data;
  const run = str(d.run_name) ?? str(d.run_id) ?? e.subject_id ?? '';
  switch (e.type) {
    case 'invite.sent':
      return `Invitation sent to ${str(d.email) ?? 'someone'}${str(d.role) ? ` (${d.role})` : ''}`;
    case 'invite.accepted':
      return `Invitation accepted${str(d.role) ? ` (${d.role})` : ''}`;
    case 'daemon.connected':
      return `Daemon ${str(d.daemon_name) ?? str(d.daemon_id) ?? e.subject_id ?? ''} connected`;
    case 'daemon.disconnected':
      return `Daemon ${str(d.daemon_name) ?? str(d.daemon_id) ?? e.subject_id ?? ''} disconnected`;
    case 'run.ended':
      return `Run ${run} ended${str(d.state) ? `: ${d.state}` : ''}`;
    case 'review.requested':
      return `Run ${run} needs a review${str(d.phase) ? ` of phase ${d.phase}` : ''}`;
    case 'notification.test':
      return 'Test notification from svc: this channel works';
    default:
      return `${e.type}${run ? ` ${run}` : ''}`;
  }
}

/** Up to 10 short key/value facts of an event, for Slack blocks and Discord embed fields. */
function facts(e: EventEnvelope): [string, string][] {
  const out: [string, string][] = [['event', e.type]];
  for (const [k, v] of Object.entries(e.data)) {
    if (out.length >= 10) break;
    if (v === null || v === undefined || typeof v === 'object') continue;
    out.push([k, String(v).slice(0, 200)]);
  }
  return out;
}

export function webhookPayload(e: EventEnvelope): EventEnvelope {
  return e;
}

/** Slack incoming webhook: `text` (the fallback and notification line) and Block Kit `blocks`. */
export function slackPayload(e: EventEnvelope) {
  const text = summarize(e);
  return {
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `*${escapeSlack(text)}*` } },
      {
        type: 'section',
        fields: facts(e).map(([k, v]) => ({ type: 'mrkdwn', text: `*${k}*\n${escapeSlack(v)}` })),
      },
      {
        type: 'context',
        elements: [{ type: 'mrkdwn', text: `${new Date(e.occurred_at).toISOString()} · ${e.id}` }],
      },
    ],
  };
}

/** Discord webhook: `content` (max 2000 characters) and one embed. */
export function discordPayload(e: EventEnvelope) {
  const text = summarize(e).slice(0, 2000);
  return {
    content: text,
    embeds: [
      {
        title: e.type,
        description: text.slice(0, 4096),
        timestamp: new Date(e.occurred_at).toISOString(),
        fields: facts(e).map(([name, value]) => ({ name, value: value || '-', inline: true })),
        footer: { text: e.id },
      },
    ],
    // Never let event data mention @everyone or roles.
    allowed_mentions: { parse: [] as string[] },
  };
}

const escapeSlack = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The request body for one destination type (stored in the outbox, so retries send the same bytes). */
export function formatBody(type: DestinationType, e: EventEnvelope): string {
  if (type === 'slack') return JSON.stringify(slackPayload(e));
  if (type === 'discord') return JSON.stringify(discordPayload(e));
  return JSON.stringify(webhookPayload(e));
}

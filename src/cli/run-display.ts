import type { Actor, LogLine, Run } from '../shared/api/runs.js';
import type { HubClient } from './client.js';
import { shortId } from './resolve.js';

export { attemptOf, attemptStarts, runningTime } from '../shared/api/run-time.js';

/**
 * How `svc runs` shows a run to a person: the names of what it refers to (looked up once per
 * command, never cached across commands), log lines with their time, attempts and running time.
 */

/** `name (01a208dd)`, or the short id alone when the name cannot be read. */
const named = (name: string | null, id: string) => (name ? `${name} (${shortId(id)})` : id);

/**
 * Names of teams, realms, workspaces and daemons by id, each asked for at most once. A lookup the
 * caller may not make (or of a record since removed) leaves the id.
 */
export class Names {
  private readonly seen = new Map<string, Promise<string | null>>();
  constructor(private readonly client: HubClient) {}

  private once(key: string, look: () => Promise<string>): Promise<string | null> {
    let p = this.seen.get(key);
    if (!p) {
      p = look().catch(() => null);
      this.seen.set(key, p);
    }
    return p;
  }

  /** `hello-team@1.0.0` for a team version id. */
  teamVersion(id: string) {
    return this.once(`team:${id}`, async () => {
      const t = (await this.client.api.call('teams/get', { id })).data;
      return `${t.name}@${t.version}`;
    });
  }
  realm(id: string) {
    return this.once(`realm:${id}`, async () => (await this.client.api.call('realms/get', { id })).data.name);
  }
  workspace(id: string) {
    return this.once(
      `ws:${id}`,
      async () => (await this.client.api.call('workspaces/get', { id })).data.name,
    );
  }
  daemon(id: string) {
    return this.once(
      `daemon:${id}`,
      async () => (await this.client.api.call('daemons/get', { id })).data.name,
    );
  }

  /** `hello-team@1.0.0 (01a208dd)`, `-` when the run has none. */
  async team(r: Run) {
    const id = r.team_version_id ?? r.team_id;
    if (!id) return '-';
    return named(r.team_version_id ? await this.teamVersion(r.team_version_id) : null, id);
  }
  async realmOf(id: string) {
    return named(await this.realm(id), id);
  }
  async workspaceOf(id: string | null) {
    return id ? named(await this.workspace(id), id) : '-';
  }
  async daemonOf(id: string | null) {
    return id ? named(await this.daemon(id), id) : '-';
  }

  /** `by daemon dev`, `by alice`, `by the hub`. */
  async actor(a: Actor | null): Promise<string> {
    if (!a) return '';
    switch (a.type) {
      case 'user':
        return a.handle ? ` by ${a.handle}` : a.user_id ? ` by user ${shortId(a.user_id)}` : '';
      case 'daemon':
        return ` by daemon ${(await this.daemon(a.daemon_id)) ?? shortId(a.daemon_id)}`;
      case 'schedule':
        return ` by schedule ${shortId(a.schedule_id)}`;
      case 'trigger':
        return ` by trigger ${shortId(a.trigger_id)}`;
      default:
        return ' by the hub';
    }
  }
}

export function formatRunningTime({ ms, attempts }: { ms: number; attempts: number }): string {
  if (attempts === 0) return 'not started';
  const s = ms / 1000;
  const span =
    s < 60 ? `${s.toFixed(1)} s` : s < 3600 ? `${(s / 60).toFixed(1)} min` : `${(s / 3600).toFixed(1)} h`;
  return `ran ${span} over ${attempts} attempt${attempts === 1 ? '' : 's'}`;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/**
 * A log line's time: `HH:MM:SS.mmm` local for today, with the date on other days, and always the
 * full UTC date and time (`…Z`) with `utc`.
 */
export function logTime(at: number, utc: boolean, now = Date.now()): string {
  const d = new Date(at);
  if (utc) return `${d.toISOString().replace('T', ' ')}`;
  const clock = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
  const today = new Date(now).toDateString() === d.toDateString();
  return today ? clock : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock}`;
}

export const logLine = (l: LogLine, utc: boolean) =>
  `${logTime(l.at, utc)}  ${l.phase ? `[${l.phase}] ` : ''}${l.text}\n`;

export const attemptMarker = (n: number) => `── attempt ${n} ──\n`;

/**
 * The console's hash router as pure functions: `#/runs?state=running` ⇄ a Route value. The hash keeps
 * every page a static `/` for the hub (no server-side routes), and survives reloads.
 */
/** The runs page's filters, as they stand in its hash: state, team id, a text in the name, who
 * started the run (a user id), and a start date range (`YYYY-MM-DD`, local, both days included). */
export const RUN_FILTERS = ['state', 'team', 'q', 'by', 'from', 'to'] as const;
export type RunFilters = Record<(typeof RUN_FILTERS)[number], string | null>;

export const noRunFilters = (): RunFilters =>
  Object.fromEntries(RUN_FILTERS.map((k) => [k, null])) as RunFilters;

export type Route =
  | { name: 'signin'; next: string | null }
  | ({ name: 'runs' } & RunFilters)
  | { name: 'run'; id: string /** Its logs show this phase only. */; phase?: string }
  | { name: 'reviews'; all: boolean }
  | { name: 'daemons' }
  | { name: 'schedules' }
  | { name: 'catalog' }
  | { name: 'channels'; channel: string | null }
  | { name: 'members' }
  | { name: 'tokens' }
  | { name: 'secrets' }
  | { name: 'notfound'; path: string };

export const NAV: readonly { name: Route['name']; label: string; hash: string }[] = [
  { name: 'runs', label: 'Runs', hash: '#/runs' },
  { name: 'reviews', label: 'Reviews', hash: '#/reviews' },
  { name: 'schedules', label: 'Schedules', hash: '#/schedules' },
  { name: 'daemons', label: 'Daemons', hash: '#/daemons' },
  { name: 'catalog', label: 'Catalog', hash: '#/catalog' },
  { name: 'channels', label: 'Channels', hash: '#/channels' },
  { name: 'secrets', label: 'Secrets', hash: '#/secrets' },
  { name: 'members', label: 'Members', hash: '#/members' },
  { name: 'tokens', label: 'Tokens', hash: '#/tokens' },
];

const ID = /^[A-Za-z0-9_-]{1,200}$/;

export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#/, '');
  const q = raw.indexOf('?');
  const path = (q < 0 ? raw : raw.slice(0, q)).replace(/\/+$/, '') || '/runs';
  const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const parts = path.split('/').filter(Boolean).map(safeDecode);
  const [head, second, ...rest] = parts;
  if (rest.length > 0) return { name: 'notfound', path };
  switch (head) {
    case 'signin':
      return second === undefined ? { name: 'signin', next: params.get('next') } : notFound(path);
    case 'runs':
      if (second === undefined)
        return {
          name: 'runs',
          ...(Object.fromEntries(RUN_FILTERS.map((k) => [k, params.get(k)])) as RunFilters),
        };
      if (second === null || !ID.test(second)) return notFound(path);
      return params.get('phase')
        ? { name: 'run', id: second, phase: params.get('phase')! }
        : { name: 'run', id: second };
    case 'reviews':
      return second === undefined ? { name: 'reviews', all: params.get('all') === '1' } : notFound(path);
    case 'daemons':
    case 'schedules':
    case 'catalog':
    case 'members':
    case 'tokens':
    case 'secrets':
      return second === undefined ? { name: head } : notFound(path);
    case 'channels':
      if (second === undefined) return { name: 'channels', channel: params.get('channel') };
      return notFound(path);
    default:
      return notFound(path);
  }
}

function notFound(path: string): Route {
  return { name: 'notfound', path };
}

function safeDecode(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/** The hash of a route; parseRoute(formatRoute(r)) equals r. */
export function formatRoute(route: Route): string {
  const qs = (entries: [string, string | null | false][]) => {
    const p = new URLSearchParams();
    for (const [k, v] of entries) if (v) p.set(k, v);
    const s = p.toString();
    return s ? `?${s}` : '';
  };
  switch (route.name) {
    case 'signin':
      return `#/signin${qs([['next', route.next]])}`;
    case 'runs':
      return `#/runs${qs(RUN_FILTERS.map((k) => [k, route[k]]))}`;
    case 'run':
      return `#/runs/${encodeURIComponent(route.id)}${qs([['phase', route.phase ?? null]])}`;
    case 'reviews':
      return `#/reviews${qs([['all', route.all && '1']])}`;
    case 'daemons':
    case 'schedules':
    case 'catalog':
    case 'members':
    case 'tokens':
    case 'secrets':
      return `#/${route.name}`;
    case 'channels':
      return `#/channels${qs([['channel', route.channel]])}`;
    case 'notfound':
      return `#${route.path}`;
  }
}

/** Where to go after signing in: a `next` hash of ours, never another origin or the sign-in page. */
export function afterSignIn(next: string | null): string {
  if (!next?.startsWith('#/')) return '#/runs';
  const r = parseRoute(next);
  return r.name === 'signin' || r.name === 'notfound' ? '#/runs' : formatRoute(r);
}

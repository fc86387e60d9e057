/** The console's shell: sign-in gate, header (navigation, scope, user), and the page of the route. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, session, setUnauthorizedHandler } from './api.js';
import { CatalogPage } from './pages/catalog.js';
import { ChannelsPage } from './pages/channels.js';
import { DaemonsPage } from './pages/daemons.js';
import { MembersPage } from './pages/members.js';
import { ReviewsPage } from './pages/reviews.js';
import { RunPage } from './pages/run.js';
import { RunsPage } from './pages/runs.js';
import { SchedulesPage } from './pages/schedules.js';
import { SecretsPage } from './pages/secrets.js';
import { SignInPage } from './pages/signin.js';
import { TokensPage } from './pages/tokens.js';
import { formatRoute, NAV, parseRoute, type Route } from './router.js';
import { ScopePicker, ScopeProvider } from './scope.js';
import type { User } from './types.js';
import { PageTitle } from './ui.js';

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function go(hash: string): void {
  if (location.hash !== hash) location.hash = hash;
}

function signInHash(): string {
  const r = parseRoute(location.hash);
  return formatRoute({ name: 'signin', next: r.name === 'signin' ? r.next : location.hash || null });
}

export function App() {
  const route = useRoute();
  // undefined: checking the stored token; null: signed out.
  const [user, setUser] = useState<User | null | undefined>(session.token() ? undefined : null);

  useEffect(() => {
    setUnauthorizedHandler(() => {
      setUser(null);
      go(signInHash());
    });
    if (!session.token()) return;
    api('auth/whoami', {}).then(
      (r) => setUser(r.data.user),
      () => setUser(null),
    );
  }, []);

  useEffect(() => {
    if (user === null && route.name !== 'signin') go(signInHash());
  }, [user, route.name]);

  // After navigation, focus the page title (not on the first load: the browser starts at the top).
  const first = useRef(true);
  const key = formatRoute(route);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    document.getElementById('page-title')?.focus({ preventScroll: false });
  }, [key]);

  if (route.name === 'signin' || user === null) {
    return (
      <main id="main" class="signin-main">
        <SignInPage next={route.name === 'signin' ? route.next : null} onSignedIn={(u) => setUser(u)} />
      </main>
    );
  }
  if (user === undefined) {
    return (
      <main id="main" aria-busy="true">
        <p class="muted">Loading…</p>
      </main>
    );
  }
  const signOut = async () => {
    try {
      await api('auth/sign_out', {});
    } catch {
      // already revoked or unreachable: forget it anyway
    }
    session.clear();
    setUser(null);
    go('#/signin');
  };
  return (
    <ScopeProvider user={user}>
      <button type="button" class="skip" onClick={skipToMain}>
        Skip to content
      </button>
      <header class="top">
        <a class="brand" href="#/runs">
          svc
        </a>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.name}>
                <a
                  href={n.hash}
                  aria-current={
                    n.name === route.name || (n.name === 'runs' && route.name === 'run') ? 'page' : undefined
                  }
                >
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <ScopePicker />
        <div class="who">
          <span title={user.email}>{user.handle}</span>
          <button type="button" class="link" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Page route={route} />
      </main>
    </ScopeProvider>
  );
}

/** A skip link that is a button: the hash belongs to the router, so it moves focus instead. */
function skipToMain() {
  document.getElementById('main')?.focus();
}

function Page({ route }: { route: Route }) {
  switch (route.name) {
    case 'runs':
      return <RunsPage filters={route} />;
    case 'run':
      return <RunPage id={route.id} phase={route.phase ?? null} />;
    case 'reviews':
      return <ReviewsPage all={route.all} />;
    case 'daemons':
      return <DaemonsPage />;
    case 'schedules':
      return <SchedulesPage />;
    case 'catalog':
      return <CatalogPage />;
    case 'channels':
      return <ChannelsPage channel={route.channel} />;
    case 'members':
      return <MembersPage />;
    case 'tokens':
      return <TokensPage />;
    case 'secrets':
      return <SecretsPage />;
    default:
      return (
        <>
          <PageTitle>Not found</PageTitle>
          <p>
            Nothing lives at <code>{route.name === 'notfound' ? route.path : ''}</code>. Go to the{' '}
            <a href="#/runs">runs</a>.
          </p>
        </>
      );
  }
}

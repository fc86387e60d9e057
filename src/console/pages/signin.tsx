import { useState } from 'preact/hooks';
import { ApiError, api, session } from '../api.js';
import { afterSignIn } from '../router.js';
import type { User } from '../types.js';

export function SignInPage({ next, onSignedIn }: { next: string | null; onSignedIn: (u: User) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await api('auth/sign_in', { email, password });
      session.set(r.data.token);
      onSignedIn(r.data.user);
      location.hash = afterSignIn(next);
    } catch (err) {
      setError(
        err instanceof ApiError && err.code === 'unauthorized'
          ? 'That e-mail and password do not match an account.'
          : (err as Error).message,
      );
      setBusy(false);
    }
  };

  return (
    <form class="card signin" onSubmit={submit} aria-describedby={error ? 'signin-error' : undefined}>
      <h1 id="page-title" tabIndex={-1}>
        Sign in to svc
      </h1>
      <label>
        E-mail
        <input
          type="email"
          name="email"
          autoComplete="username"
          required
          value={email}
          onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        Password
        <input
          type="password"
          name="password"
          autoComplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
        />
      </label>
      <p id="signin-error" class="note error" role="alert" hidden={!error}>
        {error}
      </p>
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}

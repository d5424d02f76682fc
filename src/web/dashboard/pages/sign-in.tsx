import { useEffect, useState } from 'preact/hooks';
import type { Session } from '../session.js';
import { ErrorAlert, Field, messageOf } from '../ui.js';
import { Logo } from '../logo.js';

/** The sign-in page: e-mail and password; a refusal is shown in an alert region with the API's message. */
export function SignInPage({ session, notice }: { session: Session; notice: string | null }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => { document.title = 'Sign in · Parley'; }, []);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await session.signIn(email.trim(), password);
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  }

  return (
    <main class="auth">
      <div class="auth-card">
        <Logo />
        <h1>Sign in</h1>
        <p class="muted auth-lead">Manage API keys, agents and members of your organization.</p>
        {notice !== null && error === null && <p class="notice">{notice}</p>}
        <ErrorAlert message={error} />
        <form onSubmit={submit} class="stack">
          <Field id="email" label="E-mail">
            <input id="email" name="email" type="email" autocomplete="username" required value={email}
              onInput={(e) => setEmail(e.currentTarget.value)} />
          </Field>
          <Field id="password" label="Password">
            <input id="password" name="password" type="password" autocomplete="current-password" required value={password}
              onInput={(e) => setPassword(e.currentTarget.value)} />
          </Field>
          <button type="submit" class="btn btn-primary btn-block" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
        </form>
      </div>
    </main>
  );
}

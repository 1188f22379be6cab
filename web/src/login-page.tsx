import { useState, type FormEvent } from 'react';
import { ApiClient, ApiError } from './api.js';

/** Asks for the admin token once per browser tab, and checks it against the API before going on. */
export function LoginPage({ notice, onSignIn }: { notice?: string | undefined; onSignIn: (api: ApiClient) => void }) {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<string | undefined>(notice);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const api = new ApiClient(token.trim());
    setBusy(true);
    setProblem(undefined);
    try {
      await api.sessions();
      onSignIn(api);
    } catch (error) {
      setProblem(
        error instanceof ApiError && error.status === 401
          ? 'Wrong token: the gateway refused it.'
          : `Could not reach the gateway: ${error instanceof Error ? error.message : String(error)}`,
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="login">
      <form className="card login-card" onSubmit={(event) => void submit(event)} aria-labelledby="login-title">
        <h1 id="login-title">toolgate console</h1>
        <p className="muted">
          Paste the admin token. <code>toolgate serve</code> prints it at first start; it is kept in the data
          directory's <code>secrets.json</code>, or set as <code>adminToken</code> in your config.
        </p>
        <label htmlFor="token">Admin token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          required
          value={token}
          onChange={(event) => setToken(event.target.value)}
          aria-invalid={problem !== undefined}
          aria-describedby={problem === undefined ? undefined : 'login-problem'}
        />
        {problem !== undefined && (
          <p id="login-problem" className="error" role="alert">
            {problem}
          </p>
        )}
        <button type="submit" className="button primary" disabled={busy || token.trim() === ''}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

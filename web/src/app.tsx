import { useCallback, useMemo, useState, type ReactNode } from 'react';
import { ApiClient } from './api.js';
import { ApprovalsPage } from './approvals-page.js';
import { AuditPage } from './audit-page.js';
import { EventProvider, useConnected, useRefreshOn } from './events.js';
import { LoginPage } from './login-page.js';
import { Link, useLocation } from './router.js';
import { SessionPage } from './session-page.js';
import { SessionsPage } from './sessions-page.js';
import { ToolsPage } from './tools-page.js';
import { AuthContext, useAuth, useLoader, type Auth } from './use-loader.js';

// The token lives in sessionStorage: pasted once per tab, gone when the tab closes, never in the page's code.
const tokenKey = 'toolgate.adminToken';

function PendingCount() {
  const pending = useLoader((api) => api.approvals('pending'), 'pending-count');
  useRefreshOn(['approval.requested', 'approval.decided'], pending.reload);
  const count = pending.data?.length ?? 0;
  return count === 0 ? null : (
    <span className="badge badge-warn nav-count" aria-label={`${count} pending`}>
      {count}
    </span>
  );
}

function NavLink({ to, label, children }: { to: string; label: string; children?: ReactNode }) {
  const { path } = useLocation();
  const active = to === '/' ? path === '/' || path.startsWith('/sessions') : path.startsWith(to);
  return (
    <li className={active ? 'active' : undefined}>
      <Link to={to}>
        {label}
        {children}
      </Link>
    </li>
  );
}

function Page() {
  const { path } = useLocation();
  const session = /^\/sessions\/(.+)$/.exec(path);
  if (session?.[1] !== undefined) return <SessionPage key={session[1]} sessionId={decodeURIComponent(session[1])} />;
  if (path === '/approvals') return <ApprovalsPage />;
  if (path === '/audit') return <AuditPage />;
  if (path === '/tools') return <ToolsPage />;
  if (path === '/' || path === '/sessions') return <SessionsPage />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        No page at <code>{path}</code>. <Link to="/">Back to the sessions.</Link>
      </p>
    </section>
  );
}

function Shell() {
  const { signOut } = useAuth();
  const connected = useConnected();
  return (
    <>
      <header className="topbar">
        <Link to="/" className="brand">
          toolgate
        </Link>
        <nav aria-label="Console">
          <ul>
            <NavLink to="/" label="Sessions" />
            <NavLink to="/approvals" label="Approvals">
              <PendingCount />
            </NavLink>
            <NavLink to="/audit" label="Audit" />
            <NavLink to="/tools" label="Tools" />
          </ul>
        </nav>
        <span className={`live ${connected ? 'on' : 'off'}`} role="status">
          {connected ? 'live' : 'connecting…'}
        </span>
        <button type="button" className="button small" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main className="content">
        <Page />
      </main>
    </>
  );
}

export function App() {
  const [api, setApi] = useState<ApiClient | undefined>(() => {
    const token = sessionStorage.getItem(tokenKey);
    return token === null ? undefined : new ApiClient(token);
  });
  const [notice, setNotice] = useState<string | undefined>();
  const signOut = useCallback((reason?: string) => {
    sessionStorage.removeItem(tokenKey);
    setNotice(reason);
    setApi(undefined);
  }, []);
  const auth = useMemo<Auth | undefined>(() => (api === undefined ? undefined : { api, signOut }), [api, signOut]);

  if (auth === undefined) {
    return (
      <LoginPage
        notice={notice}
        onSignIn={(signedIn) => {
          sessionStorage.setItem(tokenKey, signedIn.token);
          setNotice(undefined);
          setApi(signedIn);
        }}
      />
    );
  }
  return (
    <AuthContext.Provider value={auth}>
      <EventProvider api={auth.api}>
        <Shell />
      </EventProvider>
    </AuthContext.Provider>
  );
}

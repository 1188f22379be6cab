import { createContext, useContext, useEffect, useState, type MouseEvent, type ReactNode } from 'react';

// A few pages need no router library: paths in the History API, and the gateway answers index.html for them.

const PathContext = createContext<{ path: string; search: string; navigate: (to: string) => void }>({
  path: '/',
  search: '',
  navigate: () => undefined,
});

export function RouterProvider({ children }: { children: ReactNode }) {
  const [location, setLocation] = useState({ path: window.location.pathname, search: window.location.search });
  useEffect(() => {
    const onPop = () => setLocation({ path: window.location.pathname, search: window.location.search });
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);
  const navigate = (to: string) => {
    window.history.pushState(null, '', to);
    const url = new URL(to, window.location.origin);
    setLocation({ path: url.pathname, search: url.search });
    window.scrollTo(0, 0);
  };
  return <PathContext.Provider value={{ ...location, navigate }}>{children}</PathContext.Provider>;
}

export function useLocation() {
  return useContext(PathContext);
}

/** An ordinary link that opens the page without reloading; new-tab clicks keep working. */
export function Link({ to, children, className }: { to: string; children: ReactNode; className?: string }) {
  const { navigate } = useLocation();
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a href={to} onClick={onClick} className={className}>
      {children}
    </a>
  );
}

export function sessionPath(sessionId: string): string {
  return `/sessions/${encodeURIComponent(sessionId)}`;
}

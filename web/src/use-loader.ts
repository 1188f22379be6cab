import { createContext, useCallback, useContext, useEffect, useRef, useState } from 'react';
import { ApiError, type ApiClient } from './api.js';

export interface Auth {
  api: ApiClient;
  /** Back to the login screen, with a reason to show there. */
  signOut: (reason?: string) => void;
}

export const AuthContext = createContext<Auth | undefined>(undefined);

export function useAuth(): Auth {
  const auth = useContext(AuthContext);
  if (auth === undefined) throw new Error('useAuth outside the signed-in console');
  return auth;
}

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `load` now and on every `reload()`; an answer that arrives after a newer request started is dropped.
 * A 401 means the token stopped working (the gateway got a new one): back to the login screen.
 */
export function useLoader<T>(load: (api: ApiClient) => Promise<T>, key: string): Loaded<T> {
  const { api, signOut } = useAuth();
  const [state, setState] = useState<{ data: T | undefined; error: string | undefined; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const latest = useRef(load);
  latest.current = load;
  const generation = useRef(0);

  const reload = useCallback(() => {
    const mine = ++generation.current;
    setState((previous) => ({ ...previous, loading: true }));
    latest.current(api).then(
      (data) => {
        if (mine === generation.current) setState({ data, error: undefined, loading: false });
      },
      (error: unknown) => {
        if (mine !== generation.current) return;
        if (error instanceof ApiError && error.status === 401) signOut('The admin token is no longer accepted.');
        setState((previous) => ({
          ...previous,
          error: error instanceof Error ? error.message : String(error),
          loading: false,
        }));
      },
    );
  }, [api, signOut]);

  useEffect(() => {
    setState({ data: undefined, error: undefined, loading: true });
    reload();
  }, [reload, key]);

  return { ...state, reload };
}

import { createContext, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import type { ApiClient, GatewayEvent } from './api.js';

type EventType = GatewayEvent['type'];
type Listener = (event: GatewayEvent) => void;

const eventTypes: EventType[] = [
  'session.seen',
  'call.started',
  'call.finished',
  'script.progress',
  'approval.requested',
  'approval.decided',
  'background.started',
  'background.finished',
  'service.state',
  'tools.changed',
];

interface EventHub {
  subscribe(listener: Listener): () => void;
}

const EventContext = createContext<EventHub | undefined>(undefined);
const ConnectedContext = createContext(false);

/** One EventSource for the whole console; pages subscribe to the event types they care about. */
export function EventProvider({ api, children }: { api: ApiClient; children: ReactNode }) {
  const listeners = useRef(new Set<Listener>());
  const [connected, setConnected] = useState(false);

  useEffect(() => {
    const source = new EventSource(api.eventsUrl());
    const deliver = (message: MessageEvent<string>) => {
      let event: GatewayEvent;
      try {
        event = JSON.parse(message.data) as GatewayEvent;
      } catch {
        return;
      }
      for (const listener of [...listeners.current]) listener(event);
    };
    for (const type of eventTypes) source.addEventListener(type, deliver);
    source.addEventListener('ready', () => setConnected(true));
    source.onerror = () => setConnected(false);
    return () => source.close();
  }, [api]);

  const hub = useMemo<EventHub>(
    () => ({
      subscribe(listener) {
        listeners.current.add(listener);
        return () => listeners.current.delete(listener);
      },
    }),
    [],
  );
  return (
    <EventContext.Provider value={hub}>
      <ConnectedContext.Provider value={connected}>{children}</ConnectedContext.Provider>
    </EventContext.Provider>
  );
}

/** Whether the event stream is open (the console is live). */
export function useConnected(): boolean {
  return useContext(ConnectedContext);
}

/** Calls `handler` for every event of the given types; the latest handler is used without resubscribing. */
export function useGatewayEvents(types: readonly EventType[], handler: (event: GatewayEvent) => void): void {
  const hub = useContext(EventContext);
  const latest = useRef(handler);
  latest.current = handler;
  const key = types.join(',');
  useEffect(() => {
    if (hub === undefined) return undefined;
    const wanted = new Set(key.split(','));
    return hub.subscribe((event) => {
      if (wanted.has(event.type)) latest.current(event);
    });
  }, [hub, key]);
}

/**
 * Reloads data when matching events arrive, at most once per `delayMs`: a burst of call events is one fetch.
 * `matches` narrows the events further (for example to one session).
 */
export function useRefreshOn(
  types: readonly EventType[],
  reload: () => void,
  matches: (event: GatewayEvent) => boolean = () => true,
  delayMs = 300,
): void {
  const timer = useRef<number | undefined>(undefined);
  useEffect(() => () => window.clearTimeout(timer.current), []);
  useGatewayEvents(types, (event) => {
    if (!matches(event) || timer.current !== undefined) return;
    timer.current = window.setTimeout(() => {
      timer.current = undefined;
      reload();
    }, delayMs);
  });
}

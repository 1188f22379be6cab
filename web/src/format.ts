import { useEffect, useState } from 'react';

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});

/** Time of day for today's events, date and time for older ones. */
export function formatTime(at: number): string {
  const sameDay = new Date(at).toDateString() === new Date().toDateString();
  return sameDay ? timeFormat.format(at) : dateTimeFormat.format(at);
}

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${Math.floor(seconds % 60)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function formatAgo(at: number, now: number): string {
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  if (seconds < 5) return 'just now';
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return formatTime(at);
}

/** JSON for people: indented, and cut when it is long. */
export function formatJson(value: unknown, maxChars = 4000): string {
  const text = JSON.stringify(value, null, 2) ?? String(value);
  return text.length > maxChars ? `${text.slice(0, maxChars)}\n… (${text.length - maxChars} more characters)` : text;
}

/** The current time, refreshed every `intervalMs` while the component is shown. */
export function useNow(intervalMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), intervalMs);
    return () => window.clearInterval(timer);
  }, [intervalMs]);
  return now;
}

const decisionLabels: Record<string, string> = {
  allow_once: 'Allowed once',
  allow_session: 'Allowed for this session',
  deny: 'Denied',
  expired: 'Expired',
};

export function decisionLabel(decision: string): string {
  return decisionLabels[decision] ?? decision;
}

export const optionLabels: Record<string, string> = {
  allow_once: 'Allow once',
  allow_session: 'Allow for this session',
  deny: 'Deny',
};

/** Every status a `gateway_call` record can have; plain data (no zod) so the console can import the list too. */
export const callStatuses = [
  'running',
  'ok',
  'error',
  'denied',
  'expired',
  'cancelled',
  'timeout',
  'background',
  'interrupted',
] as const;

/** Variables a stdio service inherits from the gateway; everything else (tokens, cloud keys) stays behind. */
export const inheritedVariables = [
  'PATH',
  'HOME',
  'LANG',
  'LC_ALL',
  'TZ',
  'TMPDIR',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
];

export function buildServiceEnvironment(
  gatewayEnvironment: NodeJS.ProcessEnv,
  configured: Readonly<Record<string, string>>,
): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const name of inheritedVariables) {
    const value = gatewayEnvironment[name];
    if (value !== undefined) environment[name] = value;
  }
  return { ...environment, ...configured };
}

/** Reconnect delays grow from 0.5 s to 30 s so a crashing service does not spin. */
export function backoffDelayMs(attempt: number): number {
  return Math.min(30_000, 500 * 2 ** Math.min(attempt, 6));
}

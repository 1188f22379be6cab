import { z } from 'zod';

/** Behaviour switches of the fleet demo, read once from the environment at start. */
export type FleetOptions = {
  /** Replaces every device's simulated latency (benchmarks use 20 ms). */
  fixedLatencyMs?: number;
  /** Makes the ~2% unanswering devices answer, so benchmarks see no failures. */
  noErrors: boolean;
  /** Duration of `export_fleet_report`. */
  reportSeconds: number;
  /** Test hook: the process exits with code 1 about 200 ms into `get_device_status` for this sn. */
  crashOnSn?: string;
};

export const DEFAULT_REPORT_SECONDS = 90;

const emptyAsUndefined = (value: unknown): unknown => (value === '' ? undefined : value);

export const FleetEnvironmentSchema = z.object({
  FLEET_FIXED_LATENCY_MS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(0).max(60_000).optional()),
  FLEET_NO_ERRORS: z.preprocess(emptyAsUndefined, z.enum(['0', '1', 'true', 'false']).optional()),
  FLEET_REPORT_SECONDS: z.preprocess(emptyAsUndefined, z.coerce.number().positive().max(3600).optional()),
  FLEET_CRASH_ON_SN: z.preprocess(emptyAsUndefined, z.string().optional()),
});

/** Parses the `FLEET_*` variables; a bad value throws with the variable's name in the message. */
export function parseFleetOptions(env: Record<string, string | undefined>): FleetOptions {
  const result = FleetEnvironmentSchema.safeParse(env);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new Error(`invalid ${String(issue?.path[0] ?? 'FLEET_* variable')}: ${issue?.message ?? 'bad value'}`);
  }
  const parsed = result.data;
  const options: FleetOptions = {
    noErrors: parsed.FLEET_NO_ERRORS === '1' || parsed.FLEET_NO_ERRORS === 'true',
    reportSeconds: parsed.FLEET_REPORT_SECONDS ?? DEFAULT_REPORT_SECONDS,
  };
  if (parsed.FLEET_FIXED_LATENCY_MS !== undefined) options.fixedLatencyMs = parsed.FLEET_FIXED_LATENCY_MS;
  if (parsed.FLEET_CRASH_ON_SN !== undefined) options.crashOnSn = parsed.FLEET_CRASH_ON_SN;
  return options;
}

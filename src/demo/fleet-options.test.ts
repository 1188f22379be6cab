import { describe, expect, it } from 'vitest';
import { DEFAULT_REPORT_SECONDS, parseFleetOptions } from './fleet-options.js';

describe('parseFleetOptions', () => {
  it('defaults to realistic behaviour', () => {
    expect(parseFleetOptions({})).toEqual({ noErrors: false, reportSeconds: DEFAULT_REPORT_SECONDS });
  });

  it('reads every FLEET_* variable', () => {
    expect(
      parseFleetOptions({
        FLEET_FIXED_LATENCY_MS: '20',
        FLEET_NO_ERRORS: '1',
        FLEET_REPORT_SECONDS: '2',
        FLEET_CRASH_ON_SN: 'FL-000007',
      }),
    ).toEqual({ fixedLatencyMs: 20, noErrors: true, reportSeconds: 2, crashOnSn: 'FL-000007' });
  });

  it('names the variable with a bad value', () => {
    expect(() => parseFleetOptions({ FLEET_FIXED_LATENCY_MS: 'fast' })).toThrow(/FLEET_FIXED_LATENCY_MS/);
    expect(() => parseFleetOptions({ FLEET_NO_ERRORS: 'yes' })).toThrow(/FLEET_NO_ERRORS/);
  });
});

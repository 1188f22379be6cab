import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../config/config-schema.js';
import { defaultConfig } from '../config/default-config.js';
import { loadConfigFile } from '../config/load-config.js';

export interface CliContext {
  config: Config;
  configSource: string;
  dataDir: string;
  environment: NodeJS.ProcessEnv;
}

/** Config: --config, else $TOOLGATE_CONFIG, else ./toolgate.json, else the demo. Data: --data-dir, config, env, ./data. */
export function resolveCliContext(
  options: { config?: string | undefined; dataDir?: string | undefined },
  environment: NodeJS.ProcessEnv,
  cwd: string,
): CliContext {
  const explicit = options.config ?? environment.TOOLGATE_CONFIG;
  const local = resolve(cwd, 'toolgate.json');
  const path = explicit !== undefined ? resolve(cwd, explicit) : existsSync(local) ? local : undefined;
  const config = path === undefined ? defaultConfig(process.execPath) : loadConfigFile(path, environment);
  const dataDir = resolve(cwd, options.dataDir ?? config.dataDir ?? environment.TOOLGATE_DATA_DIR ?? 'data');
  return { config, configSource: path ?? 'built-in demo configuration (no toolgate.json)', dataDir, environment };
}

/** `--since` takes an ISO date or a span back from now: 30m, 12h, 7d. */
export function parseSince(value: string, now: number): number {
  const span = /^(\d+)\s*([smhd])$/.exec(value.trim());
  if (span !== null) {
    const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[span[2] as 's' | 'm' | 'h' | 'd'];
    return now - Number(span[1]) * unit;
  }
  const at = Date.parse(value);
  if (Number.isNaN(at)) throw new Error(`--since: "${value}" is neither a date nor a span like 30m, 12h or 7d`);
  return at;
}

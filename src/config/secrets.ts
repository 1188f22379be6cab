import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { GatewayError } from '../errors/gateway-error.js';
import type { Config } from './config-schema.js';

const secretsSchema = z.object({
  adminToken: z.string().min(16).optional(),
  profileTokens: z.record(z.string(), z.string().min(16)).default({}),
});

export interface Secrets {
  adminToken: string;
  /** Tokens generated for profiles whose config lists none. */
  profileTokens: Record<string, string>;
  /** What was generated on this start (and so is printed once). */
  generated: string[];
}

function newToken(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('base64url')}`;
}

/** Tokens the config does not give are generated once and kept in `<dataDir>/secrets.json` (mode 0600). */
export function loadOrCreateSecrets(dataDir: string, config: Config): Secrets {
  const path = join(dataDir, 'secrets.json');
  let stored: z.infer<typeof secretsSchema> | undefined;
  if (existsSync(path)) {
    const parsed = secretsSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    if (!parsed.success)
      throw new GatewayError('config_invalid', `${path} is damaged; delete it to generate new tokens`);
    stored = parsed.data;
  }
  const generated: string[] = [];
  const adminToken = config.adminToken ?? stored?.adminToken ?? newToken('tga');
  if (config.adminToken === undefined && stored?.adminToken === undefined) generated.push('admin');
  const profileTokens: Record<string, string> = {};
  for (const [name, profile] of Object.entries(config.profiles)) {
    if (profile.tokens.length > 0) continue;
    const existing = stored?.profileTokens[name];
    profileTokens[name] = existing ?? newToken('tgp');
    if (existing === undefined) generated.push(name);
  }
  if (generated.length > 0) {
    const keepAdmin = stored?.adminToken ?? (config.adminToken === undefined ? adminToken : undefined);
    const keep = {
      ...(keepAdmin === undefined ? {} : { adminToken: keepAdmin }),
      profileTokens: { ...stored?.profileTokens, ...profileTokens },
    };
    writeFileSync(path, JSON.stringify(keep, null, 2) + '\n', { mode: 0o600 });
  }
  return { adminToken, profileTokens, generated };
}

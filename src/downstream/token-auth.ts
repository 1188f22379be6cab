import { createHash, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config/config-schema.js';

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Maps bearer tokens to profiles; compares digests in constant time so timing says nothing about a token. */
export class TokenAuth {
  private readonly profileTokens: Array<{ digest: Buffer; profile: string }>;
  private readonly adminDigest: Buffer;

  constructor(config: Pick<Config, 'profiles'>, adminToken: string, extraTokens: Record<string, string> = {}) {
    this.profileTokens = [
      ...Object.entries(config.profiles).flatMap(([profile, settings]) =>
        settings.tokens.map((token) => ({ digest: digest(token), profile })),
      ),
      ...Object.entries(extraTokens).map(([profile, token]) => ({ digest: digest(token), profile })),
    ];
    this.adminDigest = digest(adminToken);
  }

  /** The profile a token selects, or undefined; every token is compared so the time does not depend on which. */
  profileFor(token: string | undefined): string | undefined {
    if (token === undefined || token.length === 0) return undefined;
    const candidate = digest(token);
    let found: string | undefined;
    for (const entry of this.profileTokens) {
      if (timingSafeEqual(entry.digest, candidate)) found = entry.profile;
    }
    return found;
  }

  isAdmin(token: string | undefined): boolean {
    return token !== undefined && token.length > 0 && timingSafeEqual(this.adminDigest, digest(token));
  }
}

export function bearerToken(authorization: string | undefined | null): string | undefined {
  if (authorization === undefined || authorization === null) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return match?.[1];
}

/** A session keyed by a token never shows the token: only a short digest of it. */
export function tokenSessionKey(token: string): string {
  return `token-${createHash('sha256').update(token).digest('hex').slice(0, 16)}`;
}

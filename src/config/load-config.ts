import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { GatewayError } from '../errors/gateway-error.js';
import { configSchema, type Config } from './config-schema.js';

type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

function formatPath(path: readonly PropertyKey[]): string {
  return path.length === 0 ? '(top level)' : path.map(String).join('.');
}

/** Replaces `${VAR}` in every string with the environment's value; a missing variable names the key path. */
export function expandEnvironment(value: JsonValue, environment: NodeJS.ProcessEnv, path: string[] = []): JsonValue {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_match, name: string) => {
      const found = environment[name];
      if (found === undefined) {
        throw new GatewayError(
          'config_invalid',
          `config error at ${formatPath(path)}: environment variable ${name} is not set`,
        );
      }
      return found;
    });
  }
  if (Array.isArray(value))
    return value.map((item, index) => expandEnvironment(item, environment, [...path, String(index)]));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, expandEnvironment(item, environment, [...path, key])]),
    );
  }
  return value;
}

/**
 * A union's own message ("either command or url") misleads when the entry clearly meant one branch, e.g. a stdio
 * server with a bad `args`: when exactly one branch accepts all of the entry's keys, its issues are reported instead.
 */
function flattenIssue(issue: z.core.$ZodIssue, base: readonly PropertyKey[]): string[] {
  const path = [...base, ...issue.path];
  if (issue.code === 'invalid_union') {
    const fitting = issue.errors.filter(
      (branch) => !branch.some((inner) => inner.code === 'unrecognized_keys' && inner.path.length === 0),
    );
    if (fitting.length === 1 && fitting[0] !== undefined) {
      return fitting[0].flatMap((inner) => flattenIssue(inner, path));
    }
  }
  return [`config error at ${formatPath(path)}: ${issue.message}`];
}

/** One line per problem; zod's messages name types and expectations, never the received value. */
function describeIssues(error: z.ZodError): string {
  return error.issues.flatMap((issue) => flattenIssue(issue, [])).join('\n');
}

function checkReferences(config: Config): string[] {
  const problems: string[] = [];
  const seenTokens = new Map<string, string>();
  for (const [name, profile] of Object.entries(config.profiles)) {
    profile.services.forEach((service, index) => {
      if (!(service in config.mcpServers)) {
        problems.push(
          `config error at profiles.${name}.services.${index}: no service named "${service}" in mcpServers`,
        );
      }
    });
    profile.tokens.forEach((token, index) => {
      const other = seenTokens.get(token);
      if (other !== undefined) {
        problems.push(
          `config error at profiles.${name}.tokens.${index}: the same token is already used by profile "${other}"`,
        );
      }
      seenTokens.set(token, name);
    });
  }
  if (config.adminToken !== undefined && seenTokens.has(config.adminToken)) {
    problems.push('config error at adminToken: the admin token must differ from every profile token');
  }
  return problems;
}

/** Parses config text: JSON, then `${VAR}`, then the schema, then cross-references. */
export function parseConfig(text: string, environment: NodeJS.ProcessEnv, source = 'config'): Config {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new GatewayError('config_invalid', `${source} is not valid JSON: ${(error as Error).message}`);
  }
  const expanded = expandEnvironment(raw as JsonValue, environment);
  const parsed = configSchema.safeParse(expanded);
  if (!parsed.success) throw new GatewayError('config_invalid', describeIssues(parsed.error));
  const problems = checkReferences(parsed.data);
  if (problems.length > 0) throw new GatewayError('config_invalid', problems.join('\n'));
  return parsed.data;
}

export function loadConfigFile(path: string, environment: NodeJS.ProcessEnv): Config {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new GatewayError(
      'config_invalid',
      `cannot read config file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  return parseConfig(text, environment, path);
}

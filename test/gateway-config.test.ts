import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fleetService, runCli, type CliRun } from './harness.js';

// Bad configuration files through the built CLI: a non-zero exit, the key path and the expectation on stderr,
// and never a secret of the file in any output.

const secrets = {
  token: 'sekret-token-value-0123456789',
  otherToken: 'sekret-other-token-0123456789',
  header: 'sekret-header-value-0123456789',
  env: 'sekret-env-value-0123456789',
  url: 'sekret-url-value-0123456789',
};
const dir = mkdtempSync(join(tmpdir(), 'toolgate-config-'));
const fleet = { command: 'node', args: ['fleet.js'], env: { FLEET_API_KEY: secrets.env } };
const api = { url: 'https://api.example.invalid/mcp', headers: { Authorization: `Bearer ${secrets.header}` } };

function writeConfig(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return path;
}

function expectNoSecret(run: CliRun): void {
  for (const secret of Object.values(secrets)) {
    expect(run.stdout).not.toContain(secret);
    expect(run.stderr).not.toContain(secret);
  }
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const badFiles: Array<{ label: string; content: unknown; expected: RegExp[] }> = [
  {
    label: 'not JSON',
    content: `{ "mcpServers": { "api": { "headers": { "X": "${secrets.header}" `,
    expected: [/is not valid JSON/],
  },
  {
    label: 'an unknown key in a profile',
    content: {
      mcpServers: { fleet },
      profiles: { ops: { services: ['fleet'], tokens: [secrets.token], colour: 'red' } },
    },
    expected: [/config error at profiles\.ops: Unrecognized key: "colour"/],
  },
  {
    label: 'a misspelt top-level key',
    content: { mcpServer: { fleet }, profiles: {} },
    expected: [/config error at \(top level\): Unrecognized key: "mcpServer"/, /config error at mcpServers: /],
  },
  {
    label: 'a mode that is not approve or auto',
    content: {
      mcpServers: { fleet },
      profiles: { ops: { services: ['fleet'], mode: 'sometimes', tokens: [secrets.token] } },
    },
    expected: [/config error at profiles\.ops\.mode: .*expected one of "approve"\|"auto"/],
  },
  {
    label: 'a number given as a string, and a negative limit',
    content: { mcpServers: { api }, profiles: {}, listen: { port: '8080' }, settings: { results: { maxChars: -1 } } },
    expected: [/config error at listen\.port: .*expected number, received string/, /settings\.results\.maxChars: .*>0/],
  },
  {
    label: 'a stdio server whose args is not a list',
    content: { mcpServers: { fleet: { ...fleet, args: 'fleet.js' } }, profiles: {} },
    expected: [/config error at mcpServers\.fleet\.args: .*expected array, received string/],
  },
  {
    label: 'an HTTP server with a bad URL and a header of the wrong type',
    content: { mcpServers: { api: { url: `not a url ${secrets.url}`, headers: { 'X-Api-Key': 42 } } }, profiles: {} },
    expected: [
      /config error at mcpServers\.api\.url: must be an http\(s\) URL/,
      /mcpServers\.api\.headers\.X-Api-Key: .*expected string/,
    ],
  },
  {
    label: 'a server with neither command nor url',
    content: { mcpServers: { thing: {} }, profiles: {} },
    expected: [/config error at mcpServers\.thing: must have either "command" \(stdio\) or "url" \(Streamable HTTP\)/],
  },
  {
    label: 'a profile naming an unknown service',
    content: {
      mcpServers: { fleet, api },
      profiles: { ops: { services: ['fleet', 'nosuch'], tokens: [secrets.token] } },
    },
    expected: [/config error at profiles\.ops\.services\.1: no service named "nosuch" in mcpServers/],
  },
  {
    label: 'a ${VAR} that is not set',
    content: {
      mcpServers: { api: { url: api.url, headers: { Authorization: 'Bearer ${TOOLGATE_TEST_UNSET_TOKEN}' } } },
      profiles: { ops: { services: ['api'], tokens: [secrets.token] } },
    },
    expected: [
      /config error at mcpServers\.api\.headers\.Authorization: environment variable TOOLGATE_TEST_UNSET_TOKEN is not set/,
    ],
  },
  {
    label: 'a token used by two profiles',
    content: {
      mcpServers: { fleet, api },
      profiles: { a: { tokens: [secrets.token] }, b: { tokens: [secrets.otherToken, secrets.token] } },
    },
    expected: [/config error at profiles\.b\.tokens\.1: the same token is already used by profile "a"/],
  },
  {
    label: 'a token that is too short',
    content: { mcpServers: { fleet }, profiles: { a: { tokens: ['short'] } } },
    expected: [/config error at profiles\.a\.tokens\.0: tokens must be at least 16 characters/],
  },
];

describe('bad configuration files', () => {
  it.each(badFiles)('`toolgate tools` refuses $label', async ({ label, content, expected }) => {
    const path = writeConfig(`${label.replace(/\W+/g, '-')}.json`, content);
    const run = await runCli(['tools', '--config', path, '--data-dir', join(dir, 'data')]);
    expect(run.code).toBe(78);
    expect(run.stdout).toBe('');
    for (const pattern of expected) expect(run.stderr).toMatch(pattern);
    expect(run.stderr.startsWith('toolgate: ')).toBe(true);
    expectNoSecret(run);
  });

  it('`toolgate serve` refuses a bad file the same way, before listening', async () => {
    const path = writeConfig('serve-bad.json', {
      mcpServers: { api },
      profiles: { ops: { services: ['api'], mode: 'sometimes', tokens: [secrets.token] } },
      listen: { port: 0 },
    });
    const run = await runCli(['serve', '--config', path, '--data-dir', join(dir, 'serve-data')]);
    expect(run.code).toBe(78);
    expect(run.stderr).toMatch(/config error at profiles\.ops\.mode/);
    expect(run.stdout).not.toContain('is serving');
    expectNoSecret(run);
  });

  it('prints no secret of a valid file either, even when a service fails to start', async () => {
    const path = writeConfig('good.json', {
      mcpServers: {
        fleet: { ...fleetService(), env: { ...fleetService().env, FLEET_API_KEY: secrets.env } },
        api: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${secrets.header}` } },
      },
      profiles: { ops: { services: ['fleet', 'api'], tokens: [secrets.token] } },
    });
    const run = await runCli(['tools', '--config', path, '--data-dir', join(dir, 'good-data')]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('fleet__list_devices');
    expect(run.stdout).toMatch(/service api is down/);
    expectNoSecret(run);
  });
});

import type { Client } from '@modelcontextprotocol/client';
import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceDirName } from '../src/sessions/workspace.js';
import { baseConfig, connectClient, startTestGateway, textOf, tokens, type TestGateway } from './harness.js';

// Session ids and workspace paths through the real HTTP path: nothing lands or is read outside the workspace.

const hostileSessions = ['..', '../../etc', '/', '.', '~', 'a/../../b', '..\\..\\windows', '../'.repeat(3414)];
let gateway: TestGateway;
let root: string;
const clients: Client[] = [];

async function connect(era: 'legacy' | 'modern', session: string): Promise<Client> {
  const client = await connectClient(gateway.mcpUrl, tokens.ops, era, { session });
  clients.push(client);
  return client;
}

/** A cut result's path, as the reply names it. */
async function cutResult(client: Client): Promise<string> {
  const result = await client.callTool({ name: 'fleet__list_devices', arguments: { pageSize: 500 } });
  expect(result.isError, textOf(result)).toBeFalsy();
  const path = /(\.agent\/results\/[A-Za-z0-9_.-]+\.json)/.exec(textOf(result))?.[1];
  if (path === undefined) throw new Error(`no saved result named in: ${textOf(result).slice(-300)}`);
  return path;
}

function walk(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    return entry.isDirectory() ? walk(path) : [path];
  });
}

beforeAll(async () => {
  gateway = await startTestGateway(baseConfig({ settings: { results: { maxChars: 2000 } } }));
  root = dirname(gateway.dataDir);
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await gateway?.close();
});

describe('hostile session ids', () => {
  it('keep every saved result inside <dataDir>/workspaces/, one folder per session', async () => {
    const expectedDirs = new Set<string>();
    for (const session of hostileSessions) {
      const dirName = workspaceDirName(`ops/${session}`);
      expect(dirName).toMatch(/^[A-Za-z0-9_-]{1,41}-[0-9a-f]{16}$/);
      expectedDirs.add(dirName);
      for (const era of ['legacy', 'modern'] as const) {
        const client = await connect(era, session);
        const path = await cutResult(client);
        expect(existsSync(join(gateway.dataDir, 'workspaces', dirName, path))).toBe(true);
        const read = await client.callTool({ name: 'read_workspace_file', arguments: { path, length: 100 } });
        expect(read.structuredContent).toMatchObject({ path, offset: 0, eof: false });
      }
    }
    expect(expectedDirs.size).toBe(hostileSessions.length);
    expect(new Set(readdirSync(join(gateway.dataDir, 'workspaces')))).toEqual(expectedDirs);

    // Everything the gateway wrote is the store, its secrets, or a result inside one of those folders.
    for (const file of walk(root)) {
      const where = relative(root, file);
      const allowed =
        where === 'toolgate.json' ||
        /^data\/(toolgate\.db(-wal|-shm)?|secrets\.json)$/.test(where) ||
        /^data\/workspaces\/[A-Za-z0-9_-]+-[0-9a-f]{16}\/\.agent\/results\/\d+-list_devices\.json$/.test(where);
      expect(allowed, `unexpected file ${where}`).toBe(true);
    }
    for (const outside of ['/.agent', '/etc/.agent', join(gateway.dataDir, '.agent'), join(root, '.agent')]) {
      expect(existsSync(outside), outside).toBe(false);
    }
  });
});

describe('read_workspace_file and resources stay in the workspace', () => {
  let client: Client;
  let workspace: string;

  beforeAll(async () => {
    client = await connect('legacy', 'confined');
    await cutResult(client);
    workspace = join(gateway.dataDir, 'workspaces', workspaceDirName('ops/confined'));
    // The config file holds every token: a link to it, to a folder outside, and one deep inside .agent.
    symlinkSync(join(root, 'toolgate.json'), join(workspace, 'escape.json'));
    symlinkSync('/etc', join(workspace, 'outside-dir'));
    symlinkSync('../../../../toolgate.json', join(workspace, '.agent', 'results', 'relative-link.json'));
  });

  const refusedPaths = [
    '../../secrets.json',
    '../../toolgate.db',
    '../../../toolgate.json',
    '.agent/../../../../toolgate.json',
    '/etc/passwd',
    'escape.json',
    'outside-dir/passwd',
    '.agent/results/relative-link.json',
  ];

  it.each(refusedPaths)('refuses %s', async (path) => {
    const result = await client.callTool({ name: 'read_workspace_file', arguments: { path } });
    expect(result.isError).toBe(true);
    const text = textOf(result);
    expect(text).toMatch(/contains "\.\.", which could leave the workspace|is absolute|is a symbolic link/);
    expect(text).not.toContain(tokens.ops);
    expect(text).not.toContain('root:');
    expect(text).not.toContain('SQLite format');
    expect(text.length).toBeLessThan(500);
  });

  it.each(['escape.json', 'outside-dir/passwd', '../../../toolgate.json'])(
    'refuses the resource workspace:///%s',
    async (path) => {
      await expect(client.readResource({ uri: `workspace:///${path}` }, { cacheMode: 'bypass' })).rejects.toThrow(
        /is a symbolic link|contains "\.\."/,
      );
    },
  );

  it('lists no file behind a symlink as a resource', async () => {
    const { resources } = await client.listResources(undefined, { cacheMode: 'bypass' });
    const names = resources.map((resource) => resource.name);
    expect(names.some((name) => name.startsWith('.agent/results/') && name.endsWith('-list_devices.json'))).toBe(true);
    expect(names.filter((name) => name.startsWith('outside-dir/'))).toEqual([]);
  });
});

describe('a workspace folder planted as a symlink', () => {
  it('never receives a saved result through the link', async () => {
    const outside = join(root, 'outside-target');
    mkdirSync(outside);
    symlinkSync(outside, join(gateway.dataDir, 'workspaces', workspaceDirName('ops/planted')));
    const inner = join(gateway.dataDir, 'workspaces', workspaceDirName('ops/planted-inner'));
    const innerOutside = join(root, 'outside-inner');
    mkdirSync(innerOutside);
    mkdirSync(inner);
    symlinkSync(innerOutside, join(inner, '.agent'));

    for (const session of ['planted', 'planted-inner']) {
      const client = await connect('modern', session);
      const result = await client.callTool({ name: 'fleet__list_devices', arguments: { pageSize: 500 } });
      // The write is refused (the call reports an error) rather than following the link.
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/is not a directory|is a symbolic link/);
    }
    expect(walk(outside)).toEqual([]);
    expect(walk(innerOutside)).toEqual([]);
  });
});

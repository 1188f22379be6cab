import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../errors/gateway-error.js';
import { openWorkspaces, workspaceDirName, type Workspaces } from './workspace.js';

let dataDir: string;
let outside: string;
let workspaces: Workspaces;

beforeEach(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'toolgate-ws-'));
  outside = mkdtempSync(join(tmpdir(), 'toolgate-outside-'));
  writeFileSync(join(outside, 'secret.json'), '{"token":"s3cret"}');
  workspaces = await openWorkspaces(dataDir);
});

afterEach(() => {
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

describe('workspaceDirName', () => {
  const hostile = ['..', '.', '../../etc', '/', 'a/b', 'a\0b', 'x'.repeat(10_000), '', 'sessiøn-ü-😀', '-rf', '\uD800'];

  it('maps any id to one safe name, deterministically and distinctly', () => {
    const names = hostile.map(workspaceDirName);
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{0,39}-[0-9a-f]{16}$/);
    expect(new Set(names).size).toBe(hostile.length);
    expect(workspaceDirName('a/b')).toBe(workspaceDirName('a/b'));
    expect(workspaceDirName('a/b')).not.toBe(workspaceDirName('a_b'));
    expect(workspaceDirName('\uD800')).not.toBe(workspaceDirName('\uD801'));
    expect(workspaceDirName('claude-code-7f3a')).toMatch(/^claude-code-7f3a-/);
  });

  it('creates every hostile id inside <dataDir>/workspaces with the intended modes', async () => {
    for (const id of hostile) {
      const dir = await workspaces.ensure(id);
      expect(dirname(dir)).toBe(join(dataDir, 'workspaces'));
      expect(statSync(dir).mode & 0o777).toBe(0o777);
    }
    expect(statSync(join(dataDir, 'workspaces')).mode & 0o777).toBe(0o700);
  });
});

describe('files', () => {
  it('writes (creating parents) and reads back with offset and length', async () => {
    await workspaces.writeFile('s1', '.agent/results/r1.json', 'hello, workspace');
    const dir = await workspaces.ensure('s1');
    expect(readFileSync(join(dir, '.agent/results/r1.json'), 'utf8')).toBe('hello, workspace');
    expect(statSync(join(dir, '.agent/results')).mode & 0o777).toBe(0o777);

    expect(await workspaces.readFile('s1', '.agent/results/r1.json')).toEqual({
      kind: 'text',
      text: 'hello, workspace',
      size: 16,
      offset: 0,
      eof: true,
    });
    expect(await workspaces.readFile('s1', './.agent//results/r1.json', { offset: 7, length: 5 })).toEqual({
      kind: 'text',
      text: 'works',
      size: 16,
      offset: 7,
      eof: false,
    });
    const tail = await workspaces.readFile('s1', '.agent/results/r1.json', { offset: 12, length: 100, as: 'bytes' });
    expect(tail).toMatchObject({ kind: 'bytes', size: 16, eof: true });
    expect(tail.kind === 'bytes' && tail.bytes.toString()).toBe('pace');
    expect(await workspaces.readFile('s1', '.agent/results/r1.json', { offset: 99 })).toMatchObject({
      text: '',
      eof: true,
    });

    await workspaces.writeFile('s1', '.agent/results/r1.json', new Uint8Array([111, 107]));
    expect(await workspaces.readFile('s1', '.agent/results/r1.json')).toMatchObject({ text: 'ok', size: 2 });
    await expect(workspaces.readFile('s1', 'x', { offset: -1 })).rejects.toMatchObject({ code: 'invalid_args' });
  });

  it('keeps sessions apart and reports a missing file by its relative path', async () => {
    await workspaces.writeFile('s1', 'note.txt', 'one');
    await expect(workspaces.readFile('s2', 'note.txt')).rejects.toMatchObject({
      code: 'not_found',
      message: '"note.txt" does not exist in the workspace',
    });
  });

  it('caps one read at the configured size', async () => {
    const small = await openWorkspaces(dataDir, { maxReadBytes: 4 });
    await small.writeFile('s1', 'big.txt', '0123456789');
    expect(await small.readFile('s1', 'big.txt')).toMatchObject({ text: '0123', eof: false, size: 10 });
  });

  it('lists regular files sorted, skipping symlinks, and reports truncation', async () => {
    await workspaces.writeFile('s1', 'b.txt', 'b');
    await workspaces.writeFile('s1', 'a/z.txt', 'z');
    await workspaces.writeFile('s1', '.agent/scripts/sc_1/script.py', 'print(1)');
    const dir = await workspaces.ensure('s1');
    symlinkSync(join(outside, 'secret.json'), join(dir, 'link.json'));
    symlinkSync(outside, join(dir, 'linkdir'));
    expect(await workspaces.list('s1')).toEqual({
      paths: ['.agent/scripts/sc_1/script.py', 'a/z.txt', 'b.txt'],
      truncated: false,
    });
    expect(await workspaces.list('s1', { maxEntries: 2 })).toEqual({
      paths: ['.agent/scripts/sc_1/script.py', 'a/z.txt'],
      truncated: true,
    });
  });

  it('stats files and directories', async () => {
    await workspaces.writeFile('s1', 'd/f.txt', 'abc');
    expect(await workspaces.stat('s1', 'd/f.txt')).toMatchObject({ kind: 'file', size: 3 });
    expect(await workspaces.stat('s1', 'd')).toMatchObject({ kind: 'directory' });
    expect(await workspaces.stat('s1', '.')).toMatchObject({ kind: 'directory' });
    await expect(workspaces.stat('s1', 'nope')).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('confinement', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await workspaces.ensure('s1');
    symlinkSync(join(outside, 'secret.json'), join(dir, 'x.txt'));
    symlinkSync(outside, join(dir, '.agent'));
    mkdirSync(join(dir, 'sub'));
    symlinkSync(outside, join(dir, 'sub', 'deeper'));
  });

  it.each(['x.txt', '.agent/secret.json', 'sub/deeper/secret.json'])(
    'refuses to read through the link %s',
    async (path) => {
      const refusal: unknown = await workspaces.readFile('s1', path).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refusal).toBeInstanceOf(GatewayError);
      const { code, message } = refusal as GatewayError;
      expect(code).toBe('not_allowed');
      const link = path === 'x.txt' ? path : path.split('/').slice(0, -1).join('/');
      expect(message).toBe(`"${link}" is a symbolic link; the gateway does not follow links in a workspace`);
      expect(message).not.toContain(outside);
      await expect(workspaces.stat('s1', path)).rejects.toMatchObject({ code: 'not_allowed' });
    },
  );

  it.each(['x.txt', '.agent/secret.json', '.agent/results/new.json', 'sub/deeper/new.txt'])(
    'refuses to write through the link %s',
    async (path) => {
      await expect(workspaces.writeFile('s1', path, 'pwned')).rejects.toMatchObject({ code: 'not_allowed' });
      expect(readFileSync(join(outside, 'secret.json'), 'utf8')).toBe('{"token":"s3cret"}');
      expect(existsSync(join(outside, 'new.json'))).toBe(false);
      expect(existsSync(join(outside, 'results'))).toBe(false);
      expect(existsSync(join(outside, 'new.txt'))).toBe(false);
    },
  );

  it.each(['../s2/x', '..', 'a/../../x', '/etc/passwd', `a\0b`, '../../../../etc/passwd'])(
    'refuses the path %j',
    async (path) => {
      await expect(workspaces.readFile('s1', path)).rejects.toMatchObject({ code: 'not_allowed' });
      await expect(workspaces.writeFile('s1', path, 'x')).rejects.toMatchObject({ code: 'not_allowed' });
    },
  );

  it('refuses directories, FIFOs and the workspace itself as files', async () => {
    await expect(workspaces.readFile('s1', 'sub')).rejects.toMatchObject({ code: 'not_allowed' });
    await expect(workspaces.writeFile('s1', 'sub', 'x')).rejects.toMatchObject({ code: 'not_allowed' });
    await expect(workspaces.readFile('s1', '.')).rejects.toMatchObject({ code: 'not_allowed' });
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    await expect(workspaces.readFile('s1', 'pipe')).rejects.toMatchObject({
      code: 'not_allowed',
      message: '"pipe" is not a regular file',
    });
    expect((await workspaces.list('s1')).paths).toEqual([]);
  });
});

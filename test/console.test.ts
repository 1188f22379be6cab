import type { Client } from '@modelcontextprotocol/client';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createConsoleApp } from '../src/downstream/console-static.js';
import {
  baseConfig,
  connectClient,
  fleetService,
  startTestGateway,
  textOf,
  tokens,
  type TestGateway,
} from './harness.js';

// The web console in a real browser (Debian's chromium driven by playwright-core) against a real gateway with
// the demo fleet service. Needs `npm run build` first (the gateway serves web/dist).

const artifacts = join(import.meta.dirname, '..', 'test-artifacts', 'console');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

let gateway: TestGateway;
let browser: Browser;
const clients: Client[] = [];
const contexts: BrowserContext[] = [];
/** Browser console errors and page errors of the current test; any one fails it. */
let problems: string[] = [];
/** Console errors a test provokes on purpose (the 401 of a wrong token). */
let expected: RegExp[] = [];

beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  // The report runs long enough to be cancelled from the bar.
  gateway = await startTestGateway(baseConfig({ mcpServers: { fleet: fleetService({ FLEET_REPORT_SECONDS: '60' }) } }));
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
});

afterEach(async () => {
  for (const context of contexts.splice(0)) await context.close();
  const unexpected = problems.filter((problem) => !expected.some((pattern) => pattern.test(problem)));
  problems = [];
  expected = [];
  expect(unexpected).toEqual([]);
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await browser?.close();
  await gateway?.close();
});

async function newPage(viewport = { width: 1280, height: 900 }): Promise<Page> {
  const context = await browser.newContext({ viewport });
  contexts.push(context);
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return page;
}

async function signIn(page: Page, path = '/'): Promise<void> {
  await page.goto(`${gateway.url}${path}`);
  await page.getByLabel('Admin token').fill(tokens.admin);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
  await page.getByText('live', { exact: true }).waitFor();
}

async function client(profile: 'ops' | 'auto', session: string): Promise<Client> {
  const connected = await connectClient(gateway.mcpUrl, tokens[profile], 'modern', { session });
  clients.push(connected);
  return connected;
}

/** A call the test awaits later: if the test fails first, closing the client must not be an unhandled rejection. */
function later<T>(promise: Promise<T>): Promise<T> {
  void promise.catch(() => undefined);
  return promise;
}

async function pendingApprovals(session: string): Promise<Array<{ id: string }>> {
  const answer = await fetch(`${gateway.url}/api/approvals?status=pending&session=${encodeURIComponent(session)}`, {
    headers: { Authorization: `Bearer ${tokens.admin}` },
  });
  return ((await answer.json()) as { approvals: Array<{ id: string }> }).approvals;
}

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}

/** The page never scrolls sideways (narrow windows stack instead). */
async function pageWidth(page: Page): Promise<{ scroll: number; viewport: number }> {
  return page.evaluate<{ scroll: number; viewport: number }>(
    '({ scroll: document.documentElement.scrollWidth, viewport: window.innerWidth })',
  );
}

function auditRows(page: Page, count: number) {
  return page.waitForFunction(`document.querySelectorAll('table.audit tbody tr').length === ${count}`);
}

const progressScript = `
import time
from agent_tools import call, progress
for i in range(1, 11):
    call("fleet__get_device_status", {"sn": "FL-%06d" % i})
    progress(i, 10, "device %d of 10" % i)
    time.sleep(0.4)
print("checked 10 devices")
`;

describe('web console', () => {
  it('is served at / with index.html for its own paths, never for unknown API paths', async () => {
    const home = await fetch(`${gateway.url}/`);
    expect(home.status).toBe(200);
    const html = await home.text();
    expect(html).toContain('<div id="root">');
    expect(html).not.toContain(tokens.admin);
    const deep = await fetch(`${gateway.url}/sessions/${encodeURIComponent('auto/x')}`);
    expect(await deep.text()).toBe(html);
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    const asset = await fetch(`${gateway.url}${script ?? '/missing'}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('javascript');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    const unknown = await fetch(`${gateway.url}/api/no-such-route`, {
      headers: { Authorization: `Bearer ${tokens.admin}` },
    });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('not_found');
    // Without a build, / says how to make one.
    const unbuilt = await createConsoleApp(join(artifacts, 'no-such-dist')).request('/');
    expect(unbuilt.status).toBe(503);
    expect(await unbuilt.text()).toContain('npm run build');
  });

  it('refuses a wrong token and stays on the login screen', async () => {
    expected = [/status of 401/];
    const page = await newPage();
    await page.goto(`${gateway.url}/`);
    await page.getByLabel('Admin token').fill('not-the-admin-token');
    // Keyboard only: from the field to the button, then Enter.
    await page.keyboard.press('Tab');
    expect(await page.locator(':focus').textContent()).toBe('Sign in');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'Wrong token' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Console' }).count()).toBe(0);
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
    await screenshot(page, 'login-wrong-token');
    // The API refuses the wrong token too, for the event stream as well.
    const api = await fetch(`${gateway.url}/api/sessions`, { headers: { Authorization: 'Bearer nope' } });
    expect(api.status).toBe(401);
    expect((await fetch(`${gateway.url}/api/events?token=nope`)).status).toBe(401);
    // The right one signs in and is kept for the tab only.
    await page.getByLabel('Admin token').fill(tokens.admin);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    expect(await page.evaluate<string[]>('Object.values(sessionStorage)')).toEqual([tokens.admin]);
    expect(await page.content()).not.toContain(tokens.admin);
  });

  it('shows a running script with its progress bar at the bottom of the timeline, and removes it after the end', async () => {
    const mcp = await client('auto', 'progress');
    const page = await newPage();
    await signIn(page, `/sessions/${encodeURIComponent('auto/progress')}`);
    await page.getByRole('heading', { name: 'auto/progress' }).waitFor();

    const run = later(
      mcp.callTool({
        name: 'run_script',
        arguments: { code: progressScript, tools: [], description: 'check ten devices slowly' },
      }),
    );
    const bar = page.getByRole('progressbar', { name: 'Script progress' });
    await bar.waitFor({ timeout: 15_000 });
    expect(await bar.getAttribute('aria-valuemax')).toBe('10');
    await page.waitForFunction(
      "Number(document.querySelector('[role=progressbar]').getAttribute('aria-valuenow')) >= 3",
    );
    const block = page.getByRole('region', { name: 'Script progress' });
    expect(await block.textContent()).toMatch(/Script running.*calls.*device \d+ of 10/);
    // The block is the last thing of the timeline.
    const progressFollowsTimeline = `document.querySelector('.timeline').compareDocumentPosition(
      document.querySelector('.script-progress')) & Node.DOCUMENT_POSITION_FOLLOWING`;
    expect(await page.evaluate<number>(progressFollowsTimeline)).not.toBe(0);
    await screenshot(page, 'session-script-progress');

    const result = await run;
    expect(textOf(result)).toMatch(/^run_script ok · 10 calls \(0 failed\)/);
    expect(result.isError).not.toBe(true);
    await page.getByText('Script ok', { exact: true }).waitFor();
    const ended = Date.now();
    await block.waitFor({ state: 'detached', timeout: 10_000 });
    const lingered = Date.now() - ended;
    expect(lingered).toBeGreaterThan(2_000);
    expect(lingered).toBeLessThan(8_000);

    // The finished script in the timeline, with its record files opening in the viewer.
    const item = page.locator('.script-item').filter({ hasText: 'check ten devices slowly' });
    await item.getByText('10 calls · 0 failed').waitFor();
    await item.getByRole('button', { name: 'output.txt' }).click();
    const viewer = page.getByRole('dialog');
    await viewer.getByText('checked 10 devices').waitFor();
    await screenshot(page, 'session-file-viewer');
    await page.keyboard.press('Escape');
    await viewer.waitFor({ state: 'hidden' });
    await item.getByRole('button', { name: 'calls.jsonl' }).click();
    await viewer.getByText('fleet__get_device_status').first().waitFor();
    await viewer.getByRole('button', { name: 'Close' }).click();
    await screenshot(page, 'session-timeline');

    // The sessions page lists the session with its profile.
    await page.getByRole('link', { name: 'Sessions' }).first().click();
    const row = page.getByRole('row').filter({ hasText: 'auto/progress' });
    await row.waitFor();
    expect(await row.textContent()).toContain('auto');
    await screenshot(page, 'sessions');
  });

  it('approves a script from its card; a call card decided elsewhere updates at once', async () => {
    const mcp = await client('ops', 'approve');
    const page = await newPage();
    await signIn(page, '/approvals');

    const code = `from agent_tools import call\n# one label\nprint(call("fleet__set_device_label", {"sn": "FL-000007", "label": "checked"})["label"])\n`;
    const run = later(
      mcp.callTool({
        name: 'run_script',
        arguments: { code, tools: ['fleet__set_device_label'], description: 'label one device' },
      }),
    );
    const card = page.locator('.approval.pending').filter({ hasText: 'label one device' });
    await card.waitFor({ timeout: 15_000 });
    expect(await card.locator('.tool-name').allTextContents()).toEqual(['fleet__set_device_label']);
    // The full script, highlighted: a keyword, a string and the comment each in their own span.
    expect(await card.locator('pre.code').textContent()).toBe(code);
    expect(await card.locator('.tok-keyword').first().textContent()).toBe('from');
    expect(await card.locator('.tok-comment').textContent()).toBe('# one label');
    expect(await card.getByRole('button').allTextContents()).toEqual(['Allow once', 'Deny']);
    await screenshot(page, 'approvals-script-card');

    const scriptCard = page.locator(`[data-approval-id="${await card.getAttribute('data-approval-id')}"]`);
    // Keyboard: Shift+Tab from Deny reaches Allow once with a visible focus ring, and Enter presses it.
    await card.getByRole('button', { name: 'Deny' }).focus();
    await page.keyboard.press('Shift+Tab');
    expect(await page.locator(':focus').textContent()).toBe('Allow once');
    expect(await page.evaluate<string>('getComputedStyle(document.activeElement).outlineStyle')).toBe('solid');
    await page.keyboard.press('Enter');
    await scriptCard.getByText('Allowed once').waitFor();
    const result = await run;
    expect(result.isError).not.toBe(true);
    expect(textOf(result)).toMatch(/^run_script ok · 1 calls \(0 failed\)/);
    expect(textOf(result)).toContain('checked');

    // A direct write call asks too: a call card with three choices, here answered through the API (as the CLI does).
    const call = later(mcp.callTool({ name: 'fleet__set_device_label', arguments: { sn: 'FL-000008', label: 'api' } }));
    const callCard = page.locator('.approval.pending').filter({ hasText: 'fleet__set_device_label' });
    await callCard.waitFor({ timeout: 15_000 });
    expect(await callCard.getByRole('button').allTextContents()).toEqual([
      'Allow once',
      'Allow for this session',
      'Deny',
    ]);
    expect(await callCard.locator('pre.json').textContent()).toContain('"FL-000008"');
    await screenshot(page, 'approvals-call-card');
    const id = await callCard.getAttribute('data-approval-id');
    const decided = await fetch(`${gateway.url}/api/approvals/${id}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tokens.admin}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ decision: 'deny', by: 'operator on the CLI' }),
    });
    expect(decided.status).toBe(200);
    const decidedCard = page.locator(`[data-approval-id="${id}"]`);
    await decidedCard.getByText('Denied').waitFor({ timeout: 5_000 });
    expect(await decidedCard.getByRole('button').count()).toBe(0);
    expect(await decidedCard.textContent()).toContain('operator on the CLI');
    expect((await call).isError).toBe(true);
    await screenshot(page, 'approvals');

    // Both approvals are in the session's timeline with their decisions.
    await page.goto(`${gateway.url}/sessions/${encodeURIComponent('ops/approve')}`);
    await page.locator('.approval').nth(1).waitFor();
    expect(await page.locator('.approval .decision').allTextContents()).toEqual(['Allowed once', 'Denied']);
  });

  it('cancels a background call from the bar', async () => {
    const mcp = await client('auto', 'background');
    const page = await newPage();
    await signIn(page, `/sessions/${encodeURIComponent('auto/background')}`);
    const started = await mcp.callTool({ name: 'fleet__export_fleet_report', arguments: {} });
    expect(textOf(started)).toContain('moved to background as bg_');

    const bar = page.getByRole('region', { name: 'Background calls' });
    await bar.getByText('fleet__export_fleet_report').waitFor({ timeout: 10_000 });
    await sleep(2_200);
    expect(await bar.textContent()).toMatch(/\d+(\.\d)? s/);
    await screenshot(page, 'session-background-bar');
    await bar.getByRole('button', { name: /^Cancel/ }).click();
    await bar.waitFor({ state: 'detached', timeout: 10_000 });
    const item = page.locator('.background-item');
    await item.locator('.status', { hasText: 'cancelled' }).waitFor({ timeout: 10_000 });

    const answer = await fetch(`${gateway.url}/api/background?session=${encodeURIComponent('auto/background')}`, {
      headers: { Authorization: `Bearer ${tokens.admin}` },
    });
    const { background } = (await answer.json()) as { background: Array<{ status: string }> };
    expect(background.map((call) => call.status)).toEqual(['cancelled']);
    await screenshot(page, 'session-background-cancelled');
  });

  it("finds the script's record with the audit filters and pages with the keyset cursor", async () => {
    const mcp = await client('auto', 'audit');
    const auditScript =
      'from agent_tools import call\nfor sn in ["FL-000001", "FL-000002"]:\n    call("fleet__get_device_status", {"sn": sn})\n';
    const scripted = await mcp.callTool({
      name: 'run_script',
      arguments: { code: auditScript, tools: [], description: 'two devices for the audit' },
    });
    expect(textOf(scripted)).toMatch(/^run_script ok · 2 calls/);
    // 60 direct calls: more than one page of 50.
    for (let batch = 0; batch < 6; batch++) {
      await Promise.all(
        Array.from({ length: 10 }, () => mcp.callTool({ name: 'fleet__list_devices', arguments: { pageSize: 1 } })),
      );
    }
    const page = await newPage();
    await signIn(page, '/audit');
    const filters = page.getByRole('form', { name: 'Audit filters' });
    await filters.getByLabel('Tool').fill('fleet__list_devices');
    await filters.getByLabel('Session').fill('auto/audit');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    const rows = page.locator('table.audit tbody tr');
    await auditRows(page, 50);
    const firstPage = await rows.first().getAttribute('data-call-id');
    await page.getByRole('button', { name: 'Next →' }).click();
    await auditRows(page, 10);
    expect(await page.getByRole('button', { name: 'Next →' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: '← Previous' }).click();
    await auditRows(page, 50);
    expect(await rows.first().getAttribute('data-call-id')).toBe(firstPage);

    // The script's record: by tool, session, status, profile and a time range.
    await filters.getByLabel('Tool').fill('run_script');
    await filters.getByLabel('Status').selectOption('ok');
    await filters.getByLabel('Profile').selectOption('auto');
    const hourAgo = new Date(Date.now() - 3_600_000 - new Date().getTimezoneOffset() * 60_000);
    await filters.getByLabel('From').fill(hourAgo.toISOString().slice(0, 19));
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await auditRows(page, 1);
    const row = rows.first();
    expect(await row.textContent()).toContain('two devices for the audit');
    await row.getByRole('button', { name: /Show details/ }).click();
    const details = page.locator('.details-row');
    await details.getByText('Calls per tool').waitFor();
    expect(await details.locator('.per-tool').textContent()).toContain('fleet__get_device_status2');
    expect(await details.locator('.facts').textContent()).toContain('Exit code0');
    expect(await details.locator('pre.code').textContent()).toBe(auditScript);
    await details.getByRole('button', { name: 'script.py' }).click();
    await page.getByRole('dialog').getByText('fleet__get_device_status').waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();
    await screenshot(page, 'audit');

    // A filter nothing matches says so.
    await filters.getByLabel('Status').selectOption('denied');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No records match.').waitFor();
  });

  it("shows each profile's tool catalogue with classes, reasons and service state", async () => {
    const page = await newPage();
    await signIn(page, '/tools');
    const ops = page.getByRole('region', { name: /Profile ops/ });
    await ops.getByText('fleet__reboot_device').waitFor();
    const reboot = ops.getByRole('row').filter({ hasText: 'fleet__reboot_device' });
    expect(await reboot.locator('.badge').textContent()).toBe('destructive');
    const report = ops.getByRole('row').filter({ hasText: 'fleet__export_fleet_report' });
    expect(await report.textContent()).toContain('long task');
    expect(await ops.locator('.service').textContent()).toMatch(/fleet\s*up/);
    await screenshot(page, 'tools');
  });

  it('fits a narrow window without sideways scrolling', async () => {
    // A pending script card with a long line: the code block scrolls inside the card, not the page.
    const mcp = await client('ops', 'narrow');
    const waiting = later(
      mcp.callTool({
        name: 'run_script',
        arguments: {
          code: `from agent_tools import call\nprint("${'wide '.repeat(60)}")\n`,
          tools: ['fleet__set_device_label'],
          description: 'a long line on a narrow screen',
        },
      }),
    );
    while ((await pendingApprovals('ops/narrow')).length === 0) await sleep(50);
    const page = await newPage({ width: 400, height: 860 });
    await signIn(page);
    for (const [path, name] of [
      ['/', 'sessions'],
      [`/sessions/${encodeURIComponent('auto/progress')}`, 'session'],
      [`/sessions/${encodeURIComponent('ops/approve')}`, 'session-approvals'],
      [`/sessions/${encodeURIComponent('ops/narrow')}`, 'session-pending'],
      ['/approvals', 'approvals'],
      ['/audit', 'audit'],
      ['/tools', 'tools'],
    ] as const) {
      await page.goto(`${gateway.url}${path}`);
      await page.getByRole('main').locator('h1').first().waitFor();
      // Let the page's data arrive and render.
      await sleep(800);
      const width = await pageWidth(page);
      expect(width.scroll, path).toBeLessThanOrEqual(width.viewport);
      await screenshot(page, `narrow-${name}`);
    }
    // The sessions list with a pending approval, wide.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${gateway.url}/`);
    await page.getByRole('row').filter({ hasText: 'ops/narrow' }).getByText('1 pending').waitFor();
    await screenshot(page, 'sessions-pending');
    const [pending] = await pendingApprovals('ops/narrow');
    await fetch(`${gateway.url}/api/approvals/${pending?.id ?? 'none'}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tokens.admin}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ decision: 'deny' }),
    });
    expect((await waiting).isError).toBe(true);
  });
});

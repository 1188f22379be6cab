import { describe, expect, it } from 'vitest';
import { FLEET_EPOCH, FLEET_SITES, createPrng, generateFleet, listDevicePage, summarizeFleet } from './fleet-data.js';

describe('createPrng', () => {
  it('repeats the same sequence for the same seed and differs for another seed', () => {
    const first = createPrng(42);
    const second = createPrng(42);
    const other = createPrng(43);
    const sequence = Array.from({ length: 5 }, () => first());
    expect(Array.from({ length: 5 }, () => second())).toEqual(sequence);
    expect(Array.from({ length: 5 }, () => other())).not.toEqual(sequence);
    for (const value of sequence) expect(value >= 0 && value < 1).toBe(true);
  });
});

describe('generateFleet', () => {
  const fleet = generateFleet();

  it('is deterministic across calls', () => {
    expect(generateFleet()).toEqual(fleet);
    expect(fleet[122]?.sn).toBe('FL-000123');
  });

  it('has 500 devices with unique, well-formed serial numbers', () => {
    expect(fleet).toHaveLength(500);
    expect(new Set(fleet.map((device) => device.sn)).size).toBe(500);
    for (const device of fleet) expect(device.sn).toMatch(/^FL-\d{6}$/);
  });

  it('spreads devices over the 8 sites', () => {
    const sites = new Set(fleet.map((device) => device.site));
    expect([...sites].sort()).toEqual([...FLEET_SITES].sort());
    for (const site of sites) expect(fleet.filter((device) => device.site === site).length).toBeGreaterThan(20);
  });

  it('marks about 2% of devices as unanswering', () => {
    expect(fleet.filter((device) => device.unanswering)).toHaveLength(10);
  });

  it('keeps simulated latency within 5–50 ms and varies it per device', () => {
    const latencies = fleet.map((device) => device.latencyMs);
    expect(Math.min(...latencies)).toBeGreaterThanOrEqual(5);
    expect(Math.max(...latencies)).toBeLessThanOrEqual(50);
    expect(new Set(latencies).size).toBeGreaterThan(20);
  });

  it('has every status, consistent health and timestamps before the fixed epoch', () => {
    const offline = fleet.filter((device) => device.status === 'offline');
    expect(offline.length).toBeGreaterThan(5);
    expect(fleet.some((device) => device.status === 'degraded')).toBe(true);
    for (const device of fleet) {
      expect(device.health).toBeGreaterThanOrEqual(0);
      expect(device.health).toBeLessThanOrEqual(100);
      expect(Date.parse(device.lastSeen)).toBeLessThanOrEqual(Date.parse(FLEET_EPOCH));
    }
    for (const device of offline) expect(device.health).toBe(0);
  });
});

describe('listDevicePage', () => {
  const fleet = generateFleet();

  it('pages through every device exactly once', () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = listDevicePage(fleet, { cursor, pageSize: 120 });
      if (!page.ok) throw new Error(page.message);
      expect(page.value.total).toBe(500);
      seen.push(...page.value.devices.map((device) => device.sn));
      cursor = page.value.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(5);
    expect(seen).toEqual(fleet.map((device) => device.sn));
  });

  it('filters by site and binds the cursor to that filter', () => {
    const site = FLEET_SITES[0];
    const first = listDevicePage(fleet, { pageSize: 5, site });
    if (!first.ok) throw new Error(first.message);
    expect(first.value.total).toBe(fleet.filter((device) => device.site === site).length);
    for (const device of first.value.devices) expect(device.site).toBe(site);
    const mismatch = listDevicePage(fleet, { cursor: first.value.nextCursor, pageSize: 5 });
    expect(mismatch.ok).toBe(false);
  });

  it('rejects an unknown site and a forged cursor', () => {
    expect(listDevicePage(fleet, { pageSize: 5, site: 'atlantis' })).toMatchObject({ ok: false });
    expect(listDevicePage(fleet, { pageSize: 5, cursor: 'not-a-cursor' })).toMatchObject({ ok: false });
  });
});

describe('summarizeFleet', () => {
  it('counts per status and per site add up to the fleet size', () => {
    const report = summarizeFleet(generateFleet());
    const { online, degraded, offline } = report.byStatus;
    expect(online + degraded + offline).toBe(500);
    expect(report.bySite).toHaveLength(8);
    expect(report.bySite.reduce((sum, site) => sum + site.total, 0)).toBe(500);
    for (const site of report.bySite) expect(site.online + site.degraded + site.offline).toBe(site.total);
  });
});

/** Simulated fleet data for the `fleet` demo service: pure functions, no I/O, same data every run. */

export const FLEET_SIZE = 500;
export const FLEET_SEED = 0x5eed_f1ee;
/** Every generated timestamp is relative to this instant, never to the wall clock. */
export const FLEET_EPOCH = '2026-01-15T12:00:00.000Z';

export const FLEET_SITES = [
  'amsterdam',
  'berlin',
  'chicago',
  'dublin',
  'lisbon',
  'osaka',
  'sao-paulo',
  'toronto',
] as const;

const MODELS = ['FX-100', 'FX-200', 'FX-300 Edge', 'GW-50 Gateway', 'SN-9 Sensor Hub'] as const;
const FIRMWARE = ['3.8.2', '4.0.1', '4.1.0', '4.2.3', '4.3.0-rc1'] as const;
const UNANSWERING_DEVICE_COUNT = 10;

export type DeviceStatus = 'online' | 'degraded' | 'offline';

export type Device = {
  sn: string;
  site: string;
  model: string;
  firmware: string;
  status: DeviceStatus;
  health: number;
  temperatureC: number;
  uptimeHours: number;
  lastSeen: string;
  /** Simulated controller round-trip for a status query, 5–50 ms. */
  latencyMs: number;
  /** The simulated controller times out for this device (about 2% of the fleet). */
  unanswering: boolean;
};

export type DeviceSummary = Pick<Device, 'sn' | 'site' | 'model'>;

export type DevicePage = { devices: DeviceSummary[]; nextCursor?: string; total: number };

export type PageRequest = { cursor?: string | undefined; pageSize: number; site?: string | undefined };

export type Outcome<T> = { ok: true; value: T } | { ok: false; message: string };

export type SiteReport = { site: string; total: number; online: number; degraded: number; offline: number };

export type FleetReport = {
  generatedFor: string;
  total: number;
  byStatus: { online: number; degraded: number; offline: number };
  bySite: SiteReport[];
};

/** mulberry32: a tiny seeded PRNG so the fleet is identical on every run and machine. */
export function createPrng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function formatSerialNumber(index: number): string {
  return `FL-${String(index).padStart(6, '0')}`;
}

function pick<T>(items: readonly T[], random: () => number): T {
  const item = items[Math.floor(random() * items.length)];
  if (item === undefined) throw new Error('pick from an empty list');
  return item;
}

function between(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

function pickStatus(random: () => number): DeviceStatus {
  const roll = random();
  if (roll < 0.06) return 'offline';
  if (roll < 0.18) return 'degraded';
  return 'online';
}

function chooseUnanswering(random: () => number, size: number, count: number): Set<number> {
  const chosen = new Set<number>();
  while (chosen.size < Math.min(count, size)) chosen.add(Math.floor(random() * size));
  return chosen;
}

/** Builds the 500-device fleet from the fixed seed; calling it twice gives equal arrays. */
export function generateFleet(seed: number = FLEET_SEED, size: number = FLEET_SIZE): Device[] {
  const random = createPrng(seed);
  // Uneven site weights make per-site pages and reports look like a real estate.
  const siteWeights = FLEET_SITES.map(() => 1 + random() * 2);
  const weightTotal = siteWeights.reduce((sum, weight) => sum + weight, 0);
  const unanswering = chooseUnanswering(random, size, UNANSWERING_DEVICE_COUNT);
  const epochMs = Date.parse(FLEET_EPOCH);
  const devices: Device[] = [];
  for (let index = 0; index < size; index++) {
    let roll = random() * weightTotal;
    let siteIndex = 0;
    while (siteIndex < FLEET_SITES.length - 1 && roll >= (siteWeights[siteIndex] ?? 0)) {
      roll -= siteWeights[siteIndex] ?? 0;
      siteIndex++;
    }
    const status = pickStatus(random);
    const minutesAgo = status === 'offline' ? between(random, 180, 7 * 24 * 60) : between(random, 0, 4);
    devices.push({
      sn: formatSerialNumber(index + 1),
      site: FLEET_SITES[siteIndex] ?? 'amsterdam',
      model: pick(MODELS, random),
      firmware: pick(FIRMWARE, random),
      status,
      health: status === 'online' ? between(random, 80, 100) : status === 'degraded' ? between(random, 35, 79) : 0,
      temperatureC: between(random, 280, 720) / 10,
      uptimeHours: status === 'offline' ? 0 : between(random, 1, 24 * 180),
      lastSeen: new Date(epochMs - minutesAgo * 60_000).toISOString(),
      latencyMs: between(random, 5, 50),
      unanswering: unanswering.has(index),
    });
  }
  return devices;
}

function encodeCursor(offset: number, site: string | undefined): string {
  return Buffer.from(JSON.stringify({ offset, site: site ?? null })).toString('base64url');
}

function decodeCursor(cursor: string): { offset: number; site: string | null } | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const { offset, site } = parsed as Record<string, unknown>;
    if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0) return undefined;
    if (site !== null && typeof site !== 'string') return undefined;
    return { offset, site };
  } catch {
    return undefined;
  }
}

/** One page of the (optionally site-filtered) fleet; the cursor is opaque and bound to the filter. */
export function listDevicePage(devices: readonly Device[], request: PageRequest): Outcome<DevicePage> {
  const { site, pageSize } = request;
  if (site !== undefined && !devices.some((device) => device.site === site)) {
    return { ok: false, message: `unknown site "${site}"; known sites: ${FLEET_SITES.join(', ')}` };
  }
  let offset = 0;
  if (request.cursor !== undefined) {
    const decoded = decodeCursor(request.cursor);
    if (decoded === undefined || decoded.site !== (site ?? null)) {
      return { ok: false, message: 'invalid cursor: pass the nextCursor of the previous page with the same site' };
    }
    offset = decoded.offset;
  }
  const matching = site === undefined ? devices : devices.filter((device) => device.site === site);
  const slice = matching.slice(offset, offset + pageSize);
  const page: DevicePage = {
    devices: slice.map(({ sn, site: deviceSite, model }) => ({ sn, site: deviceSite, model })),
    total: matching.length,
  };
  if (offset + pageSize < matching.length) page.nextCursor = encodeCursor(offset + pageSize, site);
  return { ok: true, value: page };
}

/** Counts per site and status, the body of `export_fleet_report`. */
export function summarizeFleet(devices: readonly Device[]): FleetReport {
  const byStatus = { online: 0, degraded: 0, offline: 0 };
  const bySite = new Map<string, SiteReport>();
  for (const device of devices) {
    byStatus[device.status]++;
    const site = bySite.get(device.site) ?? { site: device.site, total: 0, online: 0, degraded: 0, offline: 0 };
    site.total++;
    site[device.status]++;
    bySite.set(device.site, site);
  }
  return {
    generatedFor: FLEET_EPOCH,
    total: devices.length,
    byStatus,
    bySite: [...bySite.values()].sort((left, right) => left.site.localeCompare(right.site)),
  };
}

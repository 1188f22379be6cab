import type { CallRecord } from '../store/store-records.js';

function cell(value: string, width: number): string {
  return value.length > width ? `${value.slice(0, width - 1)}…` : value.padEnd(width);
}

/** One line per gateway_call record, newest first; a script's line carries its calls and failures. */
export function formatAuditRows(rows: readonly CallRecord[]): string {
  const lines = [
    `${'ID'.padEnd(7)} ${'STARTED'.padEnd(24)} ${'PROFILE'.padEnd(10)} ${'SESSION'.padEnd(28)} ${'TOOL'.padEnd(32)} ${'STATUS'.padEnd(11)} ${'MS'.padStart(7)}  SUMMARY`,
  ];
  for (const row of rows) {
    const summary =
      row.script === null
        ? (row.resultSummary ?? '')
        : `${row.script.description ?? ''} · ${row.script.calls} calls (${row.script.failures} failed) · exit ${row.script.exitCode ?? '-'}`;
    lines.push(
      [
        String(row.id).padEnd(7),
        new Date(row.startedAt).toISOString().padEnd(24),
        cell(row.profile, 10),
        cell(row.sessionId, 28),
        cell(row.tool, 32),
        cell(row.status, 11),
        String(row.durationMs ?? '-').padStart(7),
        ` ${summary.slice(0, 120)}`,
      ].join(' '),
    );
  }
  return lines.join('\n');
}

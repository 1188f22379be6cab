import type { z } from 'zod';
import { GatewayError } from '../errors/gateway-error.js';

/** Parses one row read from SQLite; a row that does not fit is a fault of the gateway, never of a client. */
export function parseRow<T>(schema: z.ZodType<T>, row: unknown, table: string): T {
  const result = schema.safeParse(row);
  if (!result.success) {
    throw new GatewayError('internal', `a row of ${table} does not have the expected shape`, { cause: result.error });
  }
  return result.data;
}

/** Parses a JSON text column with its schema; NULL stays null. */
export function parseJsonColumn<T>(schema: z.ZodType<T>, text: string | null, column: string): T | null {
  if (text === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new GatewayError('internal', `column ${column} does not hold valid JSON`, { cause: error });
  }
  return parseRow(schema, value, column);
}

/** JSON text for a nullable column: undefined and null both become SQL NULL. */
export function toJsonColumn(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

/** Clamps a caller's page size into [1, max], using the default when absent or not a number. */
export function clampLimit(limit: number | undefined, fallback: number, max: number): number {
  if (limit === undefined || !Number.isFinite(limit)) return fallback;
  return Math.min(max, Math.max(1, Math.floor(limit)));
}

import picomatch from 'picomatch';
import type { ToolClass, ToolOverride } from '../config/config-schema.js';

export interface ToolAnnotationsLike {
  readOnlyHint?: boolean | undefined;
  destructiveHint?: boolean | undefined;
}

export interface Classification {
  class: ToolClass;
  longTask: boolean;
  disabled: boolean;
  /** Why, in order: the annotation that decided the class, then each override that changed something. */
  reasons: string[];
}

/** The MCP defaults: readOnlyHint false, destructiveHint true, so an unannotated tool is destructive. */
export function classifyByAnnotations(annotations: ToolAnnotationsLike | undefined): {
  class: ToolClass;
  reason: string;
} {
  if (annotations?.readOnlyHint === true) return { class: 'read', reason: 'annotation readOnlyHint: true' };
  if (annotations?.destructiveHint === false) return { class: 'write', reason: 'annotation destructiveHint: false' };
  if (annotations?.destructiveHint === true)
    return { class: 'destructive', reason: 'annotation destructiveHint: true' };
  return {
    class: 'destructive',
    reason:
      annotations === undefined
        ? 'no annotations (MCP default: destructive)'
        : 'no destructiveHint (MCP default: destructive)',
  };
}

function isGlob(pattern: string): boolean {
  return picomatch.scan(pattern).isGlob;
}

/** Globs apply in file order, then an exact-name entry, so the most specific entry has the last word. */
export function matchingOverrides(
  name: string,
  overrides: Readonly<Record<string, ToolOverride>>,
): Array<[pattern: string, override: ToolOverride]> {
  const entries = Object.entries(overrides);
  const globs = entries.filter(([pattern]) => isGlob(pattern) && picomatch.isMatch(name, pattern, { dot: true }));
  const exact = entries.filter(([pattern]) => !isGlob(pattern) && pattern === name);
  return [...globs, ...exact];
}

export function classifyTool(
  name: string,
  annotations: ToolAnnotationsLike | undefined,
  overrides: Readonly<Record<string, ToolOverride>>,
): Classification {
  const base = classifyByAnnotations(annotations);
  const result: Classification = { class: base.class, longTask: false, disabled: false, reasons: [base.reason] };
  for (const [pattern, override] of matchingOverrides(name, overrides)) {
    const changes: string[] = [];
    if (override.class !== undefined) {
      result.class = override.class;
      changes.push(`class ${override.class}`);
    }
    if (override.longTask !== undefined) {
      result.longTask = override.longTask;
      changes.push(`longTask ${override.longTask}`);
    }
    if (override.disabled !== undefined) {
      result.disabled = override.disabled;
      changes.push(`disabled ${override.disabled}`);
    }
    if (changes.length > 0) result.reasons.push(`override tools["${pattern}"]: ${changes.join(', ')}`);
  }
  return result;
}

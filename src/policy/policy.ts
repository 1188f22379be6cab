import type { ToolClass } from '../config/config-schema.js';

/** The policy table of PRODUCT.md §2, as data in, decision out. */
export interface PolicyTool {
  name: string;
  class: ToolClass;
  longTask: boolean;
  disabled: boolean;
}

export interface PolicyProfile {
  mode: 'approve' | 'auto';
  readOnly: boolean;
}

export type ApprovalOption = 'allow_once' | 'allow_session' | 'deny';

export type DirectCallDecision =
  | { kind: 'run'; background: boolean }
  | { kind: 'ask'; options: ApprovalOption[]; background: boolean }
  | { kind: 'refuse'; code: 'not_offered'; reason: string };

export type ScriptCallDecision = { kind: 'run' } | { kind: 'refuse'; code: 'not_allowed'; reason: string };

/** "Not offered" tools are absent from tools/list and refused by name. */
export function offeredReason(tool: PolicyTool, profile: PolicyProfile): string | undefined {
  if (tool.disabled) return `tool ${tool.name} is disabled by the gateway's configuration`;
  if (profile.readOnly && tool.class !== 'read') {
    return `tool ${tool.name} is a ${tool.class} tool and this profile is in read-only mode`;
  }
  return undefined;
}

export function isOffered(tool: PolicyTool, profile: PolicyProfile): boolean {
  return offeredReason(tool, profile) === undefined;
}

export function decideDirectCall(
  tool: PolicyTool,
  profile: PolicyProfile,
  context: { allowedForSession: boolean },
): DirectCallDecision {
  const notOffered = offeredReason(tool, profile);
  if (notOffered !== undefined) return { kind: 'refuse', code: 'not_offered', reason: notOffered };
  const background = tool.longTask;
  switch (tool.class) {
    case 'read':
      return { kind: 'run', background };
    case 'write':
      if (profile.mode === 'auto' || context.allowedForSession) return { kind: 'run', background };
      return { kind: 'ask', options: ['allow_once', 'allow_session', 'deny'], background };
    case 'destructive':
      return { kind: 'ask', options: ['allow_once', 'deny'], background };
  }
}

/** A call made from inside a script; `listed` is the run's `tools` argument (write tools it may call). */
export function decideScriptCall(
  tool: PolicyTool,
  profile: PolicyProfile,
  listed: ReadonlySet<string>,
): ScriptCallDecision {
  const refuse = (reason: string): ScriptCallDecision => ({ kind: 'refuse', code: 'not_allowed', reason });
  if (tool.disabled) return refuse(`${tool.name} is disabled by the gateway's configuration`);
  if (tool.longTask) return refuse(`${tool.name} can only run as a long task, never from a script`);
  switch (tool.class) {
    case 'read':
      return { kind: 'run' };
    case 'write':
      if (profile.readOnly) return refuse(`${tool.name} is a write tool and this profile is in read-only mode`);
      if (!listed.has(tool.name)) {
        return refuse(`${tool.name} is a write tool not listed in run_script's "tools" argument`);
      }
      return { kind: 'run' };
    case 'destructive':
      return refuse(`${tool.name} is destructive: call it directly so a person confirms each call`);
  }
}

/** Checks run_script's `tools` list before the script starts; every problem names its tool. */
export function checkScriptToolList(
  listed: readonly string[],
  lookup: (name: string) => PolicyTool | undefined,
  profile: PolicyProfile,
): string[] {
  const problems: string[] = [];
  for (const name of listed) {
    const tool = lookup(name);
    if (tool === undefined) {
      problems.push(`${name} is not a tool of this profile`);
      continue;
    }
    const decision = decideScriptCall(tool, profile, new Set([name]));
    if (decision.kind === 'refuse') problems.push(decision.reason);
  }
  return problems;
}

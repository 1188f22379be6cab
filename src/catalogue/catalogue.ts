import { createHash } from 'node:crypto';
import type { Tool } from '@modelcontextprotocol/client';
import type { ToolClass, ToolOverride } from '../config/config-schema.js';
import { classifyTool } from './classify-tool.js';
import { isValidToolName, namespacedToolName } from './tool-names.js';

/** One third-party tool as the gateway offers it. */
export interface CatalogueEntry {
  name: string;
  service: string;
  upstreamName: string;
  /** The definition offered to clients: the upstream one under the namespaced name. */
  definition: Tool;
  class: ToolClass;
  longTask: boolean;
  disabled: boolean;
  reasons: string[];
  /** Changes whenever the upstream definition changes; approvals for a session are bound to it. */
  definitionHash: string;
}

export interface CatalogueProblem {
  service: string;
  tool: string;
  problem: string;
}

/** JSON with sorted keys, so equal values always hash the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    const record = value as Record<string, unknown>;
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function hashDefinition(tool: Tool): string {
  return createHash('sha256').update(canonicalJson(tool)).digest('hex').slice(0, 32);
}

/** Builds one service's entries; every tool that cannot be offered is reported, never dropped silently. */
export function buildServiceEntries(
  service: string,
  tools: readonly Tool[],
  overrides: Readonly<Record<string, ToolOverride>>,
): { entries: CatalogueEntry[]; problems: CatalogueProblem[] } {
  const entries: CatalogueEntry[] = [];
  const problems: CatalogueProblem[] = [];
  const seen = new Set<string>();
  for (const tool of tools) {
    const name = namespacedToolName(service, tool.name);
    if (!isValidToolName(name)) {
      problems.push({
        service,
        tool: tool.name,
        problem: `"${name}" breaks MCP's tool-name rule (1-128 of A-Z a-z 0-9 _ - .); not offered`,
      });
      continue;
    }
    if (seen.has(name)) {
      problems.push({
        service,
        tool: tool.name,
        problem: `the service lists "${tool.name}" twice; only the first is offered`,
      });
      continue;
    }
    seen.add(name);
    const classification = classifyTool(name, tool.annotations, overrides);
    entries.push({
      name,
      service,
      upstreamName: tool.name,
      definition: { ...tool, name },
      class: classification.class,
      longTask: classification.longTask,
      disabled: classification.disabled,
      reasons: classification.reasons,
      definitionHash: hashDefinition(tool),
    });
  }
  return { entries, problems };
}

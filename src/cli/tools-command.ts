import type { CatalogueEntry } from '../catalogue/catalogue.js';
import { isOffered } from '../policy/policy.js';
import type { Config } from '../config/config-schema.js';
import type { Catalogue } from '../upstream/service-registry.js';
import type { ServiceState } from '../upstream/service-connection.js';

export interface ToolsReport {
  tools: Array<{
    name: string;
    class: string;
    longTask: boolean;
    disabled: boolean;
    offered: boolean;
    reasons: string[];
  }>;
  problems: Array<{ service: string; tool: string; problem: string }>;
  services: Record<string, { state: string; error?: string }>;
}

/** What `toolgate tools` prints, as data: every tool of the chosen profile (or all), with the reasons. */
export function buildToolsReport(
  config: Config,
  catalogue: Catalogue,
  states: Record<string, ServiceState>,
  profileName: string | undefined,
): ToolsReport {
  const profile = profileName === undefined ? undefined : config.profiles[profileName];
  const inScope = (entry: CatalogueEntry): boolean => profile === undefined || profile.services.includes(entry.service);
  const services = Object.entries(states).filter(([name]) => profile === undefined || profile.services.includes(name));
  return {
    tools: [...catalogue.entries.values()].filter(inScope).map((entry) => ({
      name: entry.name,
      class: entry.class,
      longTask: entry.longTask,
      disabled: entry.disabled,
      offered: profile === undefined ? !entry.disabled : isOffered(entry, profile),
      reasons: entry.reasons,
    })),
    problems: catalogue.problems.filter(
      (problem) => profile === undefined || profile.services.includes(problem.service),
    ),
    services: Object.fromEntries(
      services.map(([name, state]) => [
        name,
        { state: state.state, ...(state.error === undefined ? {} : { error: state.error }) },
      ]),
    ),
  };
}

export function formatToolsReport(report: ToolsReport): string {
  const lines: string[] = [];
  const width = Math.max(4, ...report.tools.map((tool) => tool.name.length));
  lines.push(`${'TOOL'.padEnd(width)}  CLASS        FLAGS               REASON`);
  for (const tool of report.tools) {
    const flags = [tool.longTask ? 'longTask' : '', tool.disabled ? 'disabled' : '', tool.offered ? '' : 'not-offered']
      .filter((flag) => flag !== '')
      .join(',');
    lines.push(
      `${tool.name.padEnd(width)}  ${tool.class.padEnd(11)}  ${(flags || '-').padEnd(18)}  ${tool.reasons.join('; ')}`,
    );
  }
  for (const problem of report.problems) lines.push(`problem: ${problem.service}: ${problem.problem}`);
  for (const [name, state] of Object.entries(report.services)) {
    if (state.state !== 'up')
      lines.push(`service ${name} is ${state.state}${state.error === undefined ? '' : `: ${state.error}`}`);
  }
  return lines.join('\n');
}

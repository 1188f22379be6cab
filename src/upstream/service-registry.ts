import type { CallToolResult, Tool } from '@modelcontextprotocol/client';
import { buildServiceEntries, type CatalogueEntry, type CatalogueProblem } from '../catalogue/catalogue.js';
import type { Config } from '../config/config-schema.js';
import type { EventBus } from '../events/event-bus.js';
import type { Logger } from '../log/logger.js';
import { ServiceConnection, type ServiceState, type ToolCallOptions } from './service-connection.js';

export interface Catalogue {
  entries: ReadonlyMap<string, CatalogueEntry>;
  problems: readonly CatalogueProblem[];
}

/** The boundary the pipeline needs from the services: the live catalogue and a way to call. */
export interface ToolSource {
  catalogue(): Catalogue;
  serviceStates(): Record<string, ServiceState>;
  callTool(entry: CatalogueEntry, args: Record<string, unknown>, options: ToolCallOptions): Promise<CallToolResult>;
  onCatalogueChange(listener: (services: string[]) => void): () => void;
}

/** Owns one connection per configured service and rebuilds the catalogue when a service's tools change. */
export class ServiceRegistry implements ToolSource {
  private readonly connections = new Map<string, ServiceConnection>();
  private readonly serviceEntries = new Map<string, { entries: CatalogueEntry[]; problems: CatalogueProblem[] }>();
  private current: Catalogue = { entries: new Map(), problems: [] };
  private readonly listeners = new Set<(services: string[]) => void>();

  constructor(
    private readonly config: Config,
    private readonly deps: { logger: Logger; events: EventBus; environment: NodeJS.ProcessEnv; version: string },
  ) {
    for (const [name, serverConfig] of Object.entries(config.mcpServers)) {
      this.connections.set(
        name,
        new ServiceConnection({
          name,
          config: serverConfig,
          logger: deps.logger,
          environment: deps.environment,
          version: deps.version,
          onStateChange: (service, state) =>
            deps.events.publish({
              type: 'service.state',
              service,
              state: state.state,
              ...(state.error === undefined ? {} : { error: state.error }),
            }),
          onToolsChange: (service, tools) => this.updateService(service, tools),
        }),
      );
    }
  }

  /** Resolves when every service has either come up or failed its first attempt. */
  async start(): Promise<void> {
    await Promise.all([...this.connections.values()].map((connection) => connection.start()));
  }

  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((connection) => connection.close()));
  }

  catalogue(): Catalogue {
    return this.current;
  }

  serviceStates(): Record<string, ServiceState> {
    return Object.fromEntries([...this.connections].map(([name, connection]) => [name, connection.state()]));
  }

  callTool(entry: CatalogueEntry, args: Record<string, unknown>, options: ToolCallOptions): Promise<CallToolResult> {
    const connection = this.connections.get(entry.service);
    if (connection === undefined) throw new Error(`no connection for service ${entry.service}`);
    return connection.callTool(entry.upstreamName, args, options);
  }

  onCatalogueChange(listener: (services: string[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private updateService(service: string, tools: Tool[]): void {
    const built = buildServiceEntries(service, tools, this.config.tools);
    for (const problem of built.problems) {
      this.deps.logger.warn(`tool ${problem.tool} of service ${problem.service}: ${problem.problem}`);
    }
    this.serviceEntries.set(service, built);
    const entries = new Map<string, CatalogueEntry>();
    const problems: CatalogueProblem[] = [];
    for (const serviceBuilt of this.serviceEntries.values()) {
      for (const entry of serviceBuilt.entries) entries.set(entry.name, entry);
      problems.push(...serviceBuilt.problems);
    }
    this.current = { entries, problems };
    this.deps.events.publish({ type: 'tools.changed', services: [service] });
    for (const listener of this.listeners) listener([service]);
  }
}

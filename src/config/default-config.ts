import { fileURLToPath } from 'node:url';
import { configSchema, type Config } from './config-schema.js';

/** The root of the installed package (this file is `src/config/` in the repo and `dist/src/config/` built). */
export function packageRoot(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  return here.includes('/dist/src/')
    ? fileURLToPath(new URL('../../../', import.meta.url))
    : fileURLToPath(new URL('../../', import.meta.url));
}

export function fleetServerPath(): string {
  return `${packageRoot()}dist/src/demo/fleet-server.js`;
}

/** With no config file the gateway runs the demo: the fleet service for one profile, asking before writes. */
export function defaultConfig(nodePath: string): Config {
  return configSchema.parse({
    mcpServers: { fleet: { command: nodePath, args: [fleetServerPath()] } },
    tools: { fleet__export_fleet_report: { longTask: true } },
    profiles: { default: { services: ['fleet'], mode: 'approve' } },
  });
}

/** MCP's tool-name rule: 1–128 characters of letters, digits, `_`, `-`, `.`. */
const toolNamePattern = /^[A-Za-z0-9_.-]{1,128}$/;

export const serviceSeparator = '__';

export function isValidToolName(name: string): boolean {
  return toolNamePattern.test(name);
}

export function namespacedToolName(service: string, tool: string): string {
  return `${service}${serviceSeparator}${tool}`;
}

/** Service names have no `_`, so the first `__` always splits a namespaced name unambiguously. */
export function splitToolName(name: string): { service: string; tool: string } | undefined {
  const at = name.indexOf(serviceSeparator);
  if (at <= 0) return undefined;
  return { service: name.slice(0, at), tool: name.slice(at + serviceSeparator.length) };
}

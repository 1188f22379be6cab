/**
 * The session a request belongs to, in PRODUCT.md §1's order: the X-Toolgate-Session header, the MCP session
 * id, else the access token (one session per token). The profile is part of the id, so two profiles naming
 * the same session never share a workspace.
 */
export function resolveSessionId(input: {
  profile: string;
  headerSession?: string | undefined;
  mcpSessionId?: string | undefined;
  tokenKey: string;
}): string {
  if (input.headerSession !== undefined && input.headerSession.length > 0) {
    return `${input.profile}/${input.headerSession}`;
  }
  if (input.mcpSessionId !== undefined && input.mcpSessionId.length > 0) {
    return `${input.profile}/mcp-${input.mcpSessionId}`;
  }
  return `${input.profile}/${input.tokenKey}`;
}

import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import type { ApprovalChannelHint } from '../pipeline/ports.js';

export interface BuiltinCallOptions {
  signal: AbortSignal;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  approvalChannel?: ApprovalChannelHint;
}

/** A tool the gateway itself offers (read_workspace_file, run_script, background_calls). */
export interface BuiltinTool {
  definition: Tool;
  call(args: Record<string, unknown>, options: BuiltinCallOptions): Promise<CallToolResult>;
}

/** Every failure the gateway reports has one of these codes; edges map them to JSON-RPC, HTTP or ToolError. */
export type GatewayErrorCode =
  | 'config_invalid'
  | 'unknown_tool'
  | 'not_offered'
  | 'not_allowed'
  | 'needs_approval'
  | 'input_required'
  | 'denied'
  | 'approval_expired'
  | 'invalid_args'
  | 'unavailable'
  | 'timeout'
  | 'cancelled'
  | 'limit'
  | 'tool_error'
  | 'unauthorized'
  | 'not_found'
  | 'conflict'
  | 'sandbox_unavailable'
  | 'internal';

export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: GatewayErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.details = options.details ?? {};
  }
}

export function isGatewayError(error: unknown): error is GatewayError {
  return error instanceof GatewayError;
}

/** A message safe to show a client: gateway errors say what went wrong, anything else stays generic. */
export function describeForClient(error: unknown): string {
  return isGatewayError(error) ? error.message : 'internal error in the gateway (see the gateway log)';
}

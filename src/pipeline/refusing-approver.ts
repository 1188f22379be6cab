import { GatewayError } from '../errors/gateway-error.js';
import type { Approver } from './ports.js';

/** Until a person can be asked, a call that needs approval is refused, never run silently. */
export function createRefusingApprover(): Approver {
  return {
    request(request) {
      return Promise.reject(
        new GatewayError(
          'needs_approval',
          `${request.tools.join(', ')} needs approval, and no approval channel is set up`,
        ),
      );
    },
  };
}

import type { Decision } from '../policy-engine/types';

/** The policy name a denial of an unreadable or ambiguous request carries in answers and the audit trail. */
export const REQUEST_INTEGRITY_POLICY = 'request-integrity';

/**
 * The fixed denial of a request whose body policies cannot read as the upstream may (a repeated
 * JSON key, query and body disagreeing, a multipart body): deciding on what the gateway read
 * while the upstream acts on something else would let a policy be slipped past.
 */
export function requestIntegrityDenial(reason: string): Decision {
  return { effect: 'deny', policy: REQUEST_INTEGRITY_POLICY, rule: null, reason };
}

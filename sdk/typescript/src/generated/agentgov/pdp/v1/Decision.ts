// Original file: proto/pdp.proto

export const Decision = {
  DECISION_UNSPECIFIED: 'DECISION_UNSPECIFIED',
  DECISION_ALLOW: 'DECISION_ALLOW',
  DECISION_DENY: 'DECISION_DENY',
  DECISION_PENDING: 'DECISION_PENDING',
} as const;

export type Decision =
  | 'DECISION_UNSPECIFIED'
  | 0
  | 'DECISION_ALLOW'
  | 1
  | 'DECISION_DENY'
  | 2
  | 'DECISION_PENDING'
  | 3

export type Decision__Output = typeof Decision[keyof typeof Decision]

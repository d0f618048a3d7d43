/** Events every gateway instance must see: they keep caches current across instances. */
export type ClusterEvent =
  | { type: 'agent.changed'; orgId: string; agentId: string }
  | { type: 'agent.revoked'; orgId: string; agentId: string }
  | { type: 'policies.changed'; orgId: string; version: number; changed: string[]; kind: PolicyChangeKind }
  | { type: 'organization.changed'; orgId: string }
  | { type: 'apikey.revoked'; orgId: string; keyId: string }
  /** An upstream credential was created, rotated or revoked: instances reload it. */
  | { type: 'credential.changed'; orgId: string; credentialId: string }
  /** Admin tokens were adopted (ADMIN_TOKEN), reactivated or replaced: instances forget the admin tokens they refused. */
  | { type: 'admintokens.changed' }
  /** An admin ended labels of an agent's session (`sessionId`, `` its own scope) or, with null, on the agent itself. */
  | { type: 'session.labels_cleared'; orgId: string; agentId: string; sessionId: string | null }
  /** Emitted locally after the cross-instance channel reconnects: events may have been missed. */
  | { type: 'resync' };

/** What a change did: to a policy, or to an agent or API key the decisions depend on, or a canary rollout started or ended (rolled back or aborted; a promotion is `updated`). */
export type PolicyChangeKind = 'created' | 'updated' | 'deleted' | 'agent_revoked' | 'agent_changed' | 'apikey_revoked' | 'canary_started' | 'canary_ended';

export type ClusterEventHandler = (event: ClusterEvent) => void;

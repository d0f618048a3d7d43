import { useState } from 'react';
import { ErrorMessage } from '../components/error-message';
import { useDashboard } from '../context';
import { TIERS, type Agent, type Tier } from '../types';

/** A tier picker with its own Save button (PATCH /admin/agents/:id): arrowing through the options changes nothing by itself. */
export function TierChanger({ agent, onChanged }: { agent: Agent; onChanged: (message: string) => void }) {
  const { api } = useDashboard();
  const [tier, setTier] = useState<Tier>(agent.trustTier);
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  const save = () => {
    setBusy(true);
    setError(null);
    api.patch<Agent>(`/admin/agents/${encodeURIComponent(agent.id)}`, { trustTier: tier }).then(
      (updated) => {
        setBusy(false);
        onChanged(`${updated.name} is now ${updated.trustTier}.`);
      },
      (failure: Error) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  return (
    <div className="tier-changer">
      <select aria-label={`Trust tier of ${agent.name}`} value={tier} onChange={(event) => setTier(event.target.value as Tier)}>
        {TIERS.map((candidate) => (
          <option key={candidate}>{candidate}</option>
        ))}
      </select>
      <button type="button" onClick={save} disabled={busy || tier === agent.trustTier} aria-label={`Save the trust tier of ${agent.name}`}>
        Save
      </button>
      {error && <ErrorMessage error={error} />}
    </div>
  );
}

/** Revoking is permanent (docs/identity.md), so it asks once more before DELETE /admin/agents/:id. */
export function RevokeAgent({ agent, onRevoked }: { agent: Agent; onRevoked: (message: string) => void }) {
  const { api } = useDashboard();
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const revoke = () => {
    setError(null);
    api.delete<Agent>(`/admin/agents/${encodeURIComponent(agent.id)}`).then(
      () => {
        setConfirming(false);
        onRevoked(`${agent.name} is revoked: its tokens stopped working.`);
      },
      (failure: Error) => setError(failure),
    );
  };
  if (!confirming)
    return (
      <button type="button" className="danger" onClick={() => setConfirming(true)} aria-label={`Revoke ${agent.name}`}>
        Revoke
      </button>
    );
  return (
    <div className="confirm" role="group" aria-label={`Confirm revoking ${agent.name}`}>
      <span>Revoke for good?</span>
      <button type="button" className="danger" onClick={revoke} autoFocus>
        Yes, revoke {agent.name}
      </button>
      <button type="button" onClick={() => setConfirming(false)}>
        Cancel
      </button>
      {error && <ErrorMessage error={error} />}
    </div>
  );
}

"""What a check answers, whichever way it was reached."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Literal, Mapping, Optional

# timeout: no answer within timeout_seconds (allowed under fail-open, denied under fail-closed);
# fail-open: the gateway unreachable, allowed under fail-open.
DecisionSource = Literal["gateway", "cache", "timeout", "fail-open"]
Transport = Literal["grpc", "http"]


@dataclass(frozen=True)
class CheckRequest:
    """One permission check: the tool call and what policies may read about it."""

    agent_id: str
    plugin: str
    function: str
    args: Mapping[str, Any]
    context: Mapping[str, Any]
    trust_tier: str
    action: str = ""
    resource: str = ""
    trace_id: str = ""
    # The approval of an earlier pending answer, presented for this very call (docs/approvals.md).
    approval_id: str = ""
    # The session the call belongs to ('' for the agent's own scope; docs/policies.md "Sessions").
    session_id: str = ""


@dataclass(frozen=True)
class Decision:
    """The gateway's answer, or the SDK's own when none came (source timeout or fail-open).

    `pending`: a `require_approval` rule holds the call until a person decides (docs/approvals.md);
    `approval_id` and `approval_expires_at` name the approval to wait for and retry with."""

    decision: Literal["allow", "deny", "pending"]
    reason: str
    policy: str
    rule: str
    policy_version: int
    decision_id: str
    trace_id: str
    cacheable: bool
    cache_ttl_ms: int
    enforced: bool
    source: DecisionSource = "gateway"
    transport: Optional[Transport] = None
    approval_id: str = ""
    approval_expires_at: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    @property
    def denied(self) -> bool:
        """The call may not run now: denied, or waiting for a person's approval."""
        return self.decision != "allow"

    @property
    def pending(self) -> bool:
        """A `require_approval` rule holds the call: wait for `approval_id`, then retry with it."""
        return self.decision == "pending"

    @staticmethod
    def without_answer(source: DecisionSource, decision: Literal["allow", "deny"], reason: str) -> "Decision":
        """A decision the SDK made itself, no answer having come (its failure mode's)."""
        return Decision(decision, reason, "", "", 0, "", "", False, 0, False, source, None)

    @staticmethod
    def from_check_json(body: Dict[str, Any]) -> "Decision":
        """The answer of POST /v1/check (202 with the approval for a pending one)."""
        decision = body.get("decision")
        pending = decision == "pending"
        return Decision(
            decision="allow" if decision == "allow" else "pending" if pending else "deny",
            reason=str(body.get("reason") or ""),
            policy=str(body.get("policy") or ""),
            rule=str(body.get("rule") or ""),
            policy_version=int(body.get("policyVersion") or 0),
            decision_id=str(body.get("decisionId") or ""),
            trace_id=str(body.get("traceId") or ""),
            cacheable=bool(body.get("cacheable")),
            cache_ttl_ms=int(body.get("cacheTtlMs") or 0),
            enforced=bool(body.get("enforced", True)),
            transport="http",
            approval_id=str(body.get("approvalId") or "") if pending else "",
            approval_expires_at=str(body.get("expiresAt") or "") if pending else "",
        )


@dataclass(frozen=True)
class SoftDenial:
    """What guard() returns instead of raising when throw_on_denied is off; falsy."""

    decision: Decision

    def __bool__(self) -> bool:
        return False

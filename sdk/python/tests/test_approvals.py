"""guard() and a `require_approval` rule against a real gateway (docs/approvals.md): guard waits
while an admin decides, runs the call once when approved, and denies when rejected or when its
bounded wait ends; check() hands the pending approval to callers who wait themselves."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Dict, List

import pytest

from agentgov_sdk import ApprovalPendingError, PolicyDeniedError, SoftDenial
from conftest import MakeClient
from gateway_process import Gateway

POLICY = """name: sdk-py-approvals
match: { plugin: PaymentsPlugin, function: Refund }
rules:
  - condition: args.amount > 100
    action: require_approval
    reason: Refunds over 100 need a person
"""


@pytest.fixture(scope="module", autouse=True)
def approval_policy(gateway: Gateway) -> None:
    gateway.put_policy("sdk-py-approvals", POLICY)


def approvals(gateway: Gateway, query: str = "") -> List[Dict[str, Any]]:
    status, body = gateway.admin("GET", f"/admin/approvals{query}")
    assert status == 200, body
    return list(body["approvals"])


def pending_approval_of(gateway: Gateway, agent_id: str, timeout: float = 10.0) -> Dict[str, Any]:
    """The agent's pending approval, once its guarded call has opened it."""
    deadline = time.monotonic() + timeout
    while True:
        found = [approval for approval in approvals(gateway, "?status=pending") if approval["agentId"] == agent_id]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"no pending approval for {agent_id}"
        time.sleep(0.05)


def status_of(gateway: Gateway, approval_id: str) -> str:
    return next(str(approval["status"]) for approval in approvals(gateway) if approval["id"] == approval_id)


def in_background(run: Any) -> Dict[str, Any]:
    """Runs `run` in a thread; the returned dict gets its "value" or "error", and "thread"."""
    outcome: Dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = run()
        except BaseException as error:  # noqa: BLE001 - handed to the test to assert on
            outcome["error"] = error

    outcome["thread"] = threading.Thread(target=target, daemon=True)
    outcome["thread"].start()
    return outcome


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_guard_waits_while_an_admin_approves_then_runs_the_call_once(make_client: MakeClient, gateway: Gateway, agent_id: str, transport: str) -> None:
    client = make_client() if transport == "grpc" else make_client(grpc_address="127.0.0.1:1")
    runs: List[str] = []

    def refund() -> str:
        runs.append("refunded")
        return "refunded"

    outcome = in_background(lambda: client.guard("PaymentsPlugin", "Refund", {"amount": 500, "order": "o-1"}, refund))
    approval = pending_approval_of(gateway, agent_id)
    assert approval["action"] == "PaymentsPlugin.Refund"
    time.sleep(0.3)
    assert runs == []
    status, _ = gateway.admin("POST", f"/admin/approvals/{approval['id']}/approve", {"comment": "ok"})
    assert status == 200
    outcome["thread"].join(15)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["value"] == "refunded"
    assert runs == ["refunded"]
    assert status_of(gateway, approval["id"]) == "used"


def test_guard_denies_when_an_admin_rejects_softly_when_throw_on_denied_is_off(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    runs: List[str] = []
    strict = make_client()
    outcome = in_background(lambda: strict.guard("PaymentsPlugin", "Refund", {"amount": 300}, lambda: runs.append("strict")))
    approval = pending_approval_of(gateway, agent_id)
    gateway.admin("POST", f"/admin/approvals/{approval['id']}/reject", {"comment": "no"})
    outcome["thread"].join(15)
    error = outcome.get("error")
    assert isinstance(error, PolicyDeniedError) and not isinstance(error, ApprovalPendingError)
    assert error.decision.decision == "deny"
    assert error.decision.reason == f"Approval {approval['id']} is rejected: Refunds over 100 need a person"

    soft = make_client(throw_on_denied=False)
    outcome = in_background(lambda: soft.guard("PaymentsPlugin", "Refund", {"amount": 301}, lambda: runs.append("soft")))
    second = pending_approval_of(gateway, agent_id)
    gateway.admin("POST", f"/admin/approvals/{second['id']}/reject", {})
    outcome["thread"].join(15)
    assert isinstance(outcome.get("value"), SoftDenial)
    assert outcome["value"].decision.reason.startswith(f"Approval {second['id']} is rejected")
    assert runs == []


def test_guard_gives_up_when_nobody_decides_within_the_wait(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    client = make_client(approval_wait_seconds=1)
    runs: List[str] = []
    started = time.monotonic()
    with pytest.raises(PolicyDeniedError) as raised:
        client.guard("PaymentsPlugin", "Refund", {"amount": 200}, lambda: runs.append("ran"))
    waited = time.monotonic() - started
    assert raised.value.decision.reason.startswith("Approval appr_")
    assert "was not decided within the 1 s guard() waits" in raised.value.decision.reason
    assert 0.9 <= waited < 5
    assert runs == []
    # The approval stays pending: a person may still approve it for a later retry.
    assert pending_approval_of(gateway, agent_id)["status"] == "pending"


def test_guard_async_waits_for_the_approval_too(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    client = make_client()

    async def refund() -> str:
        return "refunded"

    outcome = in_background(lambda: asyncio.run(client.guard_async("PaymentsPlugin", "Refund", {"amount": 700}, refund)))
    approval = pending_approval_of(gateway, agent_id)
    gateway.admin("POST", f"/admin/approvals/{approval['id']}/approve", {})
    outcome["thread"].join(15)
    assert outcome.get("value") == "refunded", outcome.get("error")


def test_check_raises_the_pending_approval_which_a_retry_with_it_uses_once(make_client: MakeClient, gateway: Gateway) -> None:
    client = make_client()
    args = {"amount": 900}
    with pytest.raises(ApprovalPendingError) as raised:
        client.check("PaymentsPlugin", "Refund", args)
    approval_id = raised.value.approval_id
    assert approval_id.startswith("appr_") and raised.value.expires_at
    assert client.wait_for_approval(approval_id, 0) == "pending"

    gateway.admin("POST", f"/admin/approvals/{approval_id}/approve", {})
    assert client.wait_for_approval(approval_id) == "approved"
    # Asking where it stands spent nothing: the retry is what uses it, once.
    assert client.check("PaymentsPlugin", "Refund", args, approval_id=approval_id).allowed
    with pytest.raises(PolicyDeniedError) as again:
        client.check("PaymentsPlugin", "Refund", args, approval_id=approval_id)
    assert again.value.decision.reason == f"Approval {approval_id} was already used: an approval lets one request through"
    assert client.wait_for_approval(approval_id) == "used"

    soft = make_client(throw_on_denied=False).check("PaymentsPlugin", "Refund", {"amount": 901})
    assert (soft.decision, soft.pending, soft.allowed) == ("pending", True, False)
    assert soft.approval_id.startswith("appr_") and soft.approval_expires_at

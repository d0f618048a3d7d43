"""The decision cases shared with the other SDKs (sdk/fixtures/decision-cases.json, whose `about`
says what each part means), through this SDK: each case over gRPC and over the HTTP fallback;
cached decisions on the trail; timeouts under each failure mode and throw_on_denied; no gateway
at the address."""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any, Dict

import pytest

from agentgov_sdk import GatewayTimeoutError, GatewayUnreachableError, SoftDenial
from conftest import MakeClient
from gateway_process import FIXTURES, Gateway, free_port
from relay import StalledServer
from test_audit_trail import entries, wait_for

with open(os.path.join(FIXTURES, "decision-cases.json")) as fixture:
    SHARED = json.load(fixture)


def test_the_gateway_runs_the_fixture_policies() -> None:
    with open(os.path.join(FIXTURES, "policies.yaml")) as policies:
        assert policies.read() == SHARED["policies"]


@pytest.fixture(scope="module")
def agents(gateway: Gateway) -> Dict[str, str]:
    """The fixture's agents, created once for this module (names made unique per run)."""
    suffix = uuid.uuid4().hex[:6]
    return {a["name"]: gateway.create_agent(f"{a['name']}-{suffix}", a["trustTier"], a["tags"]) for a in SHARED["agents"]}


@pytest.mark.parametrize("transport", ["grpc", "http"])
@pytest.mark.parametrize("case", SHARED["cases"], ids=[case["name"] for case in SHARED["cases"]])
def test_shared_decision_case(case: Dict[str, Any], transport: str, agents: Dict[str, str], make_client: MakeClient) -> None:
    overrides: Dict[str, Any] = {"agent_id": agents[case["agent"]], "throw_on_denied": False}
    if transport == "http":
        overrides["grpc_address"] = f"127.0.0.1:{free_port()}"
    client = make_client(**overrides)
    decision = client.check(case["plugin"], case["function"], case["args"], context=case["context"])
    assert (decision.decision, decision.policy) == (case["expect"]["decision"], case["expect"]["policy"])
    assert decision.transport == transport


def agent_like(gateway: Gateway, name: str) -> str:
    """A new agent of the fixture agent's kind, so that each case's trail is its own."""
    [kind] = [agent for agent in SHARED["agents"] if agent["name"] == name]
    return gateway.create_agent(f"{name}-{uuid.uuid4().hex[:8]}", kind["trustTier"], kind["tags"])


@pytest.mark.parametrize("case", SHARED["cachedDenials"], ids=[case["name"] for case in SHARED["cachedDenials"]])
def test_shared_cached_decision_case(case: Dict[str, Any], gateway: Gateway, make_client: MakeClient) -> None:
    agent_id = agent_like(gateway, case["agent"])
    client = make_client(agent_id=agent_id, throw_on_denied=False)

    def ask() -> Any:
        return client.check(case["plugin"], case["function"], case["args"], context=case["context"])

    # Answers are cached once the change stream is open.
    deadline = time.monotonic() + 10
    while not client.cache._live:
        assert time.monotonic() < deadline, "the change stream never opened"
        time.sleep(0.02)
    decisions = [ask() for _ in range(case["calls"])]
    expect = case["expect"]
    assert {(d.decision, d.policy) for d in decisions} == {(expect["decision"], expect["policy"])}
    sources = [d.source for d in decisions]
    assert (sources.count("gateway"), sources.count("cache")) == (expect["fromGateway"], expect["fromCache"])
    assert client.flush(10)
    cached = wait_for(gateway, agent_id, expect["trail"]["cachedEntries"], "cached")
    assert len(cached) == expect["trail"]["cachedEntries"]
    action = f"{case['plugin']}.{case['function']}"
    decided = [e for e in entries(gateway, agent_id) if e["kind"] == "decision" and e["action"] == action and e["decision"] == expect["decision"]]
    assert len(decided) == expect["trail"]["decisionEntries"]
    if expect["trail"]["cachedNameTheGatewayDecision"]:
        assert {entry["details"]["decisionId"] for entry in cached} == {decisions[0].decision_id}


@pytest.fixture
def stalled() -> Any:
    server = StalledServer()
    yield server
    server.close()


@pytest.mark.parametrize("case", SHARED["timeouts"], ids=[case["name"] for case in SHARED["timeouts"]])
def test_shared_timeout_case(case: Dict[str, Any], gateway: Gateway, make_client: MakeClient, stalled: StalledServer) -> None:
    """gRPC stalls (a deadline is no cue for the HTTP fallback); the audit event reaches the gateway over HTTP."""
    agent_id = agent_like(gateway, case["agent"])
    client = make_client(agent_id=agent_id, grpc_address=f"127.0.0.1:{stalled.port}", timeout_seconds=case["timeoutSeconds"],
                         failure_mode=case["failureMode"], throw_on_denied=case["throwOnDenied"], cache_enabled=False)
    expect = case["expect"]
    if expect["throws"]:
        with pytest.raises(GatewayTimeoutError, match="gRPC Evaluate: no answer within"):
            client.check(case["plugin"], case["function"], case["args"], context=case["context"])
    else:
        decision = client.check(case["plugin"], case["function"], case["args"], context=case["context"])
        assert (decision.decision, decision.source) == (expect["decision"], expect["source"])
    assert client._audit.pending() == 1
    assert client.flush(10)
    [outcome] = wait_for(gateway, agent_id, 1)
    assert outcome["decision"] == expect["auditedDecision"]
    assert outcome["details"]["resultSummary"].startswith("timeout: ")
    runs = []
    try:
        result = client.guard(case["plugin"], case["function"], case["args"], lambda: runs.append(1), context=case["context"])
        assert isinstance(result, SoftDenial) != expect["runs"]
    except GatewayTimeoutError:
        pass
    assert bool(runs) == expect["runs"]


# A host name that never resolves (RFC 2606 reserves .invalid).
UNRESOLVABLE_HOST = "agentgov-unreachable.invalid"


@pytest.mark.parametrize("case", SHARED["unreachable"], ids=[case["name"] for case in SHARED["unreachable"]])
def test_shared_unreachable_case(case: Dict[str, Any], make_client: MakeClient) -> None:
    """Nothing listens on either transport: fail-closed raises at once whatever throw_on_denied
    says and records nothing (no call happened); fail-open allows and queues an event saying so."""
    if case["address"] == "unresolvable":
        addresses = {"gateway_url": f"http://{UNRESOLVABLE_HOST}:3000", "grpc_address": f"{UNRESOLVABLE_HOST}:50051"}
    else:
        addresses = {"gateway_url": f"http://127.0.0.1:{free_port()}", "grpc_address": f"127.0.0.1:{free_port()}"}
    client = make_client(**addresses, timeout_seconds=case["timeoutSeconds"], failure_mode=case["failureMode"],
                         throw_on_denied=case["throwOnDenied"], cache_enabled=False)
    expect = case["expect"]
    if expect["throws"]:
        # Not a timeout: the answer that nothing is there came at once.
        with pytest.raises(GatewayUnreachableError):
            client.check(case["plugin"], case["function"], case["args"], context=case["context"])
    else:
        decision = client.check(case["plugin"], case["function"], case["args"], context=case["context"])
        assert (decision.decision, decision.source, decision.enforced) == ("allow", "fail-open", False)
    assert client._audit.pending() == expect["auditEvents"]
    runs = []
    try:
        assert client.guard(case["plugin"], case["function"], case["args"], lambda: runs.append(1), context=case["context"]) is None
        assert not expect["throws"]
    except GatewayUnreachableError:
        assert expect["throws"]
    assert bool(runs) == expect["runs"]
    assert client._audit.pending() == expect["auditEvents"] * 2

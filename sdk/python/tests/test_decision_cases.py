"""The decision cases shared with the TypeScript SDK (sdk/fixtures/decision-cases.json), through
this SDK over gRPC and over the HTTP fallback: the same answers as the fixture expects."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any, Dict

import pytest

from conftest import MakeClient
from gateway_process import FIXTURES, Gateway, free_port

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

"""MCP tool calls' decision tokens (params._meta["io.agentgov/decision-token"]): the verifier
checked against the cases of sdk/fixtures/decision-token-tool-calls.json, which the gateway's own
code signed (scripts/sdk-tool-call-vectors.mjs), so this SDK's canonical JSON is the gateway's."""
from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

from agentgov_sdk.decision_token import TOOL_CALL_META_KEY, DecisionTokenError, DecisionTokenVerifier, VerifiedDecision, canonical_json, tool_call_hash
from gateway_process import FIXTURES

with open(os.path.join(FIXTURES, "decision-token-tool-calls.json"), encoding="utf-8") as file:
    VECTORS: dict[str, Any] = json.load(file)
CASES: list[dict[str, Any]] = VECTORS["cases"]


def verifier(clock_offset: float = 0) -> DecisionTokenVerifier:
    return DecisionTokenVerifier(jwks=VECTORS["jwks"], issuer=VECTORS["issuer"], clock=lambda: float(VECTORS["now"]) + clock_offset)


def with_token(params_text: str, token: str) -> dict[str, Any]:
    params: dict[str, Any] = json.loads(params_text)
    params["_meta"] = {"progressToken": 3, TOOL_CALL_META_KEY: token}
    return params


def refusal(params: Any, clock_offset: float = 0) -> str:
    with pytest.raises(DecisionTokenError) as error:
        asyncio.run(verifier(clock_offset).verify_tool_call(params))
    return error.value.problem


@pytest.mark.parametrize("case", CASES, ids=[case["about"] for case in CASES])
def test_canonical_arguments_are_the_gateways(case: dict[str, Any]) -> None:
    params = json.loads(case["params"])
    assert canonical_json(params.get("arguments", {})) == case["canonicalArguments"]
    assert tool_call_hash(params["name"], params.get("arguments")) == case["req"]


@pytest.mark.parametrize("case", CASES, ids=[case["about"] for case in CASES])
def test_accepts_the_token_the_gateway_signed_for_the_call(case: dict[str, Any]) -> None:
    decision = asyncio.run(verifier().verify_tool_call(with_token(case["params"], case["token"])))
    assert decision == VerifiedDecision(case["decisionId"], "agt_vectors", "org_vectors", case["action"], VECTORS["now"] + 60)


def test_refuses_a_token_for_another_tool_call() -> None:
    for case in CASES:
        for other in CASES:
            if other["req"] != case["req"]:
                assert refusal(with_token(other["params"], case["token"])) == "wrong_request", (case["about"], other["about"])


def test_refuses_the_call_with_its_tool_or_an_argument_changed() -> None:
    numbers = next(case for case in CASES if case["about"].startswith("numbers"))
    renamed = with_token(numbers["params"], numbers["token"]) | {"name": "measure2"}
    assert refusal(renamed) == "wrong_request"
    changed = with_token(numbers["params"], numbers["token"])
    changed["arguments"]["negative_zero"] = 1
    assert refusal(changed) == "wrong_request"
    added = with_token(numbers["params"], numbers["token"])
    added["arguments"]["extra"] = None
    assert refusal(added) == "wrong_request"


def test_refuses_a_call_without_a_token_and_an_expired_one() -> None:
    case = CASES[0]
    assert refusal(json.loads(case["params"])) == "missing"
    assert refusal(json.loads(case["params"]) | {"_meta": {"progressToken": 1}}) == "missing"
    assert refusal(with_token(case["params"], case["token"]), clock_offset=120) == "expired"


def test_refuses_arguments_no_json_holds() -> None:
    case = CASES[0]
    for arguments in ({"x": float("inf")}, {"x": float("nan")}, {"x": 10**400}, {"x": {1: "a"}}, {"x": object()}, ["not", "an", "object"]):
        assert refusal(with_token(case["params"], case["token"]) | {"arguments": arguments}) == "malformed", arguments
    assert refusal(with_token(case["params"], case["token"]) | {"name": 7}) == "malformed"


def test_numbers_are_written_as_ecmascript_writes_them() -> None:
    for text, expected in VECTORS["numbers"]:
        assert canonical_json(json.loads(text)) == expected, text

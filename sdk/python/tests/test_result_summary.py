"""The default result summary: the rule and cases every SDK shares
(sdk/fixtures/result-summaries.json), then the Python values JSON has no word for; and the audit
text of a decision made without the gateway (its `withoutDecision` cases)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Dict, List

import pytest

from agentgov_sdk import GatewayUnreachableError, summary_of
from conftest import MakeClient
from gateway_process import FIXTURES, Gateway, free_port
from relay import StalledServer, TcpRelay

with open(os.path.join(FIXTURES, "result-summaries.json"), encoding="utf-8") as fixture:
    FIXTURE = json.load(fixture)
SHARED: List[Dict[str, Any]] = FIXTURE["cases"]
WITHOUT_DECISION: Dict[str, Any] = FIXTURE["withoutDecision"]


@dataclass
class Customer:
    iban: str


@pytest.mark.parametrize("case", SHARED, ids=[case["name"] for case in SHARED])
def test_the_shared_cases(case: Dict[str, Any]) -> None:
    assert summary_of(case["value"]) == case["summary"]


@pytest.mark.parametrize(("value", "summary"), [
    (b"secret", "returned binary of 6 bytes"),
    (bytearray(1), "returned binary of 1 byte"),
    (("a", "b"), "returned list of 2 items"),
    ({"a"}, "returned list of 1 item"),
    (Decimal("9.99"), "returned number"),
    (Customer("DE89370400440532013000"), "returned Customer"),
])
def test_python_values_in_the_same_words(value: Any, summary: str) -> None:
    assert summary_of(value) == summary


class LookupFailed(Exception):
    pass


def test_a_call_that_raised_is_recorded_by_the_error_type_never_its_message(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    client = make_client()

    def failing() -> None:
        raise LookupFailed("no customer with IBAN DE89370400440532013000")

    with pytest.raises(LookupFailed):
        client.guard("CrmPlugin", "FindByIban", {"iban": "x"}, failing)
    assert client.flush(5)
    [outcome] = gateway.wait_for_outcomes(agent_id, 1)
    assert outcome["details"]["resultSummary"] == "raised LookupFailed"


def test_guard_records_an_object_by_its_size_never_its_keys(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    client = make_client()
    client.guard("CrmPlugin", "GetCustomer", {"id": "cus_1"}, lambda: {"id": "cus_1", "iban": "DE89370400440532013000"})
    assert client.flush(5)
    [outcome] = gateway.wait_for_outcomes(agent_id, 1)
    assert outcome["details"]["resultSummary"] == "returned object of 2 keys"


def _pattern(text: str) -> str:
    """The fixture's text as a pattern: `<why>` names the transport that failed, then anything."""
    before, after = (re.escape(part) for part in text.split("<why>"))
    return f"^{before}(gRPC|HTTP)\\b.+{after}$"


@pytest.mark.parametrize("case", WITHOUT_DECISION["cases"], ids=[case["name"] for case in WITHOUT_DECISION["cases"]])
def test_the_audit_text_of_a_decision_made_without_the_gateway(case: Dict[str, Any], make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    """As the gateway's trail holds it: gRPC stalls (timeout), or nothing listens (unreachable,
    the gateway then coming back at the HTTP address through a relay)."""
    stalled = StalledServer()
    relay = TcpRelay(int(gateway.url.rsplit(":", 1)[1]))
    try:
        if case["cause"] == "timeout":
            addresses = {"grpc_address": f"127.0.0.1:{stalled.port}"}
        else:
            addresses = {"gateway_url": f"http://127.0.0.1:{relay.port}", "grpc_address": f"127.0.0.1:{free_port()}"}
        client = make_client(**addresses, failure_mode=case["failureMode"], throw_on_denied=False, timeout_seconds=0.3, cache_enabled=False)
        value: str = WITHOUT_DECISION["value"]
        if case["check"] is None:
            with pytest.raises(GatewayUnreachableError):
                client.check("FilePlugin", "ReadFile", {"path": "/tmp/notes.txt"})
            with pytest.raises(GatewayUnreachableError):
                client.guard("FilePlugin", "ReadText", {"path": "/tmp/notes.txt"}, lambda: value)
            assert client._audit.pending() == 0
            return
        client.check("FilePlugin", "ReadFile", {"path": "/tmp/notes.txt"})
        client.guard("FilePlugin", "ReadText", {"path": "/tmp/notes.txt"}, lambda: value)
        relay.start()
        assert client.flush(10)
        recorded = {outcome["action"]: outcome["details"]["resultSummary"] for outcome in gateway.wait_for_outcomes(agent_id, 2)}
        assert re.match(_pattern(case["check"]), recorded["FilePlugin.ReadFile"]), recorded
        assert re.match(_pattern(case["guard"]), recorded["FilePlugin.ReadText"]), recorded
    finally:
        relay.stop()
        stalled.close()

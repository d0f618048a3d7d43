"""The default result summary: the rule and cases every SDK shares
(sdk/fixtures/result-summaries.json), then the Python values JSON has no word for."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Dict, List

import pytest

from agentgov_sdk import summary_of
from conftest import MakeClient
from gateway_process import FIXTURES, Gateway

with open(os.path.join(FIXTURES, "result-summaries.json"), encoding="utf-8") as fixture:
    SHARED: List[Dict[str, Any]] = json.load(fixture)["cases"]


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

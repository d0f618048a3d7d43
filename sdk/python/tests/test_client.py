"""check(), audit() and guard() against a real gateway: allow, deny (raised and soft), the
decorator, per-plugin overrides, and what guard() records."""

from __future__ import annotations

import asyncio
from typing import Callable, List

import pytest

from agentgov_sdk import PluginOptions, PolicyDeniedError, SoftDenial
from conftest import MakeClient
from gateway_process import Gateway


def test_check_allows_a_call_no_rule_denies(make_client: MakeClient) -> None:
    client = make_client()
    decision = client.check("FilePlugin", "ReadFile", {"path": "/tmp/notes.txt"})
    assert decision.allowed
    assert (decision.policy, decision.source, decision.transport) == ("block-sensitive-files", "gateway", "grpc")
    assert decision.decision_id.startswith("aud_")
    assert decision.policy_version > 0


def test_check_raises_a_typed_error_on_a_denial(make_client: MakeClient) -> None:
    client = make_client()
    with pytest.raises(PolicyDeniedError) as raised:
        client.check("FilePlugin", "ReadFile", {"path": "/etc/passwd"})
    assert raised.value.decision.policy == "block-sensitive-files"
    assert raised.value.decision.rule == "system-paths"
    assert "Access to system files blocked" in str(raised.value)


def test_check_returns_a_soft_denial_when_throw_on_denied_is_off(make_client: MakeClient) -> None:
    client = make_client(throw_on_denied=False)
    decision = client.check("FilePlugin", "ReadFile", {"path": "/etc/passwd"})
    assert decision.denied
    assert decision.reason == "Access to system files blocked"


def test_guard_runs_an_allowed_call_and_audits_its_duration_and_summary(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    client = make_client()
    result = client.guard("FilePlugin", "ReadFile", {"path": "/tmp/a.txt"}, lambda: "twelve chars")
    assert result == "twelve chars"
    assert client.flush(5)
    [outcome] = gateway.wait_for_outcomes(agent_id, 1)
    assert outcome["action"] == "FilePlugin.ReadFile"
    assert outcome["decision"] == "allow"
    assert outcome["details"]["resultSummary"] == "returned string of 12 characters"
    assert outcome["details"]["durationMs"] >= 0
    assert outcome["details"]["decisionId"].startswith("aud_")


def test_guard_does_not_run_a_denied_call(make_client: MakeClient) -> None:
    ran: List[str] = []
    strict, soft = make_client(), make_client(throw_on_denied=False)
    with pytest.raises(PolicyDeniedError):
        strict.guard("FilePlugin", "ReadFile", {"path": "/etc/shadow"}, lambda: ran.append("strict"))
    answer = soft.guard("FilePlugin", "ReadFile", {"path": "/etc/shadow"}, lambda: ran.append("soft"))
    assert isinstance(answer, SoftDenial) and not answer
    assert answer.decision.policy == "block-sensitive-files"
    assert ran == []


def test_guard_audits_a_call_that_raises_and_reraises(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    client = make_client()

    def broken() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError):
        client.guard("WeatherPlugin", "Forecast", {"city": "Oslo"}, broken)
    client.flush(5)
    [outcome] = gateway.wait_for_outcomes(agent_id, 1)
    assert outcome["details"]["resultSummary"] == "raised KeyError"


def test_the_decorator_checks_with_the_bound_arguments(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    client = make_client()

    @client.guarded("FilePlugin", "ReadFile")
    def read_file(path: str, encoding: str = "utf-8") -> str:
        return f"{path}:{encoding}"

    assert read_file("/tmp/ok.txt") == "/tmp/ok.txt:utf-8"
    with pytest.raises(PolicyDeniedError):
        read_file(path="/etc/passwd")
    client.flush(5)
    [outcome] = gateway.wait_for_outcomes(agent_id, 1)
    assert outcome["action"] == "FilePlugin.ReadFile"


def test_the_decorator_guards_a_coroutine_and_defaults_the_function_name(make_client: MakeClient) -> None:
    client = make_client(throw_on_denied=False)

    @client.guarded("FilePlugin")
    async def ReadFile(path: str) -> int:  # noqa: N802 (the tool's name as the policies know it)
        await asyncio.sleep(0)
        return len(path)

    assert asyncio.run(ReadFile("/tmp/x")) == 6
    denied = asyncio.run(ReadFile("/etc/hosts"))
    assert isinstance(denied, SoftDenial)


def test_per_plugin_overrides_of_throw_on_denied_and_trust_tier(make_client: MakeClient, gateway: Gateway) -> None:
    gateway.put_policy("adapter-tier", (
        "name: adapter-tier\nmatch: { plugin: TierPlugin }\nrules:\n"
        "  - name: restricted-adapters\n    condition: context.adapter_trust_tier == \"restricted\"\n"
        "    action: deny\n    reason: Restricted adapters may not\n"
    ))
    client = make_client(plugins={
        "FilePlugin": PluginOptions(throw_on_denied=False),
        "TierPlugin": PluginOptions(trust_tier="restricted"),
    })
    soft = client.check("FilePlugin", "ReadFile", {"path": "/etc/passwd"})
    assert soft.denied
    with pytest.raises(PolicyDeniedError) as raised:
        client.check("TierPlugin", "Run")
    assert raised.value.decision.policy == "adapter-tier"
    assert make_client().check("TierPlugin", "Run").allowed


def test_an_unknown_agent_is_a_gateway_error_not_a_denial(make_client: MakeClient) -> None:
    from agentgov_sdk import GatewayError

    client = make_client(agent_id="agent_000000000000000000000000", throw_on_denied=False)
    with pytest.raises(GatewayError) as raised:
        client.check("FilePlugin", "ReadFile", {"path": "/tmp/a"})
    assert raised.value.code == "not_found"


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_a_tripped_rate_limit_is_a_gateway_error_whatever_throw_on_denied_says(make_client: MakeClient, gateway: Gateway, transport: str) -> None:
    """As in the TypeScript SDK (and proto/pdp.proto): RESOURCE_EXHAUSTED is an error, not a denial."""
    from agentgov_sdk import GatewayError

    plugin = f"PyLimited{transport}Plugin"
    gateway.put_policy(f"py-limit-{transport}", f"name: py-limit-{transport}\nmatch: {{ plugin: {plugin} }}\nrules:\n"
                       "  - condition: rate_limit(per_agent, 1, 1m)\n    action: deny\n    reason: One a minute\n")
    client = make_client(throw_on_denied=False, **({"grpc_address": "127.0.0.1:1"} if transport == "http" else {}))
    assert client.check(plugin, "Run").transport == transport
    ran: List[bool] = []
    attempts: List[Callable[[], object]] = [lambda: client.check(plugin, "Run"), lambda: client.guard(plugin, "Run", {}, lambda: ran.append(True))]
    for attempt in attempts:
        with pytest.raises(GatewayError) as raised:
            attempt()
        assert raised.value.code == "resource_exhausted"
        assert "One a minute" in str(raised.value)
        # When to try again, over either transport (gRPC: the retry-after trailer).
        assert raised.value.retry_after is not None and raised.value.retry_after > 0
    assert ran == []


def test_audit_records_a_nan_duration_and_non_finite_arguments_rather_than_losing_the_event(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    """JSON has no NaN or Infinity: sent as they were, the gateway refused the event and it was dropped."""
    import math

    client = make_client()
    client.audit("MathPlugin", "Divide", decision="allow", duration_ms=math.nan, args={"ratio": math.inf, "rest": [math.nan, 1]})
    assert client.flush(5)
    [outcome] = gateway.wait_for_outcomes(agent_id, 1)
    assert outcome["action"] == "MathPlugin.Divide"
    assert outcome["details"]["durationMs"] == 0
    assert outcome["input"]["args"] == {"ratio": "Infinity", "rest": ["NaN", 1]}

"""Sessions (docs/policies.md "Sessions"): the three-step attack of the docs through the SDK. A
customer record read, then an untrusted web page fetched, then a mail sent: each allowed alone,
the mail denied in the session that did both, allowed in another session of the same agent."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Dict, Iterator

import pytest

from agentgov_sdk import ClientOptions, PolicyDeniedError, current_session, session
from conftest import MakeClient
from gateway_process import Gateway, free_port

MAIL = {"to": "someone@example.com"}


@pytest.fixture
def policy(gateway: Gateway, agent_id: str) -> Iterator[str]:
    """The docs' labelling policy, for this test's agent alone (session labels only, so no other
    session or agent carries them)."""
    name = f"sdk-python-exfiltration-{uuid.uuid4().hex[:6]}"
    gateway.put_policy(name, f"""name: {name}
match: {{ plugin: "Session*" }}
rules:
  - name: reads-customers
    condition: agent.id == "{agent_id}" and action == "SessionCrm.GetCustomer"
    action: label
    labels: [private_data]
    reason: Customer records were read
  - name: fetches-web
    condition: agent.id == "{agent_id}" and action == "SessionWeb.Fetch"
    action: label
    labels: [untrusted_content]
    reason: An untrusted web page was fetched
  - name: no-way-out
    condition: >
      agent.id == "{agent_id}" and action == "SessionMail.Send"
      and session.labels.has("private_data") and session.labels.has("untrusted_content")
    action: deny
    reason: Private data and untrusted content in one session; nothing leaves by mail
""")
    yield name
    gateway.admin("DELETE", f"/admin/policies/{name}")


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_the_third_step_is_denied_in_the_session_that_took_the_first_two_and_allowed_in_another(
    transport: str, policy: str, make_client: MakeClient,
) -> None:
    # Over HTTP: nothing listens at the gRPC address, so every check goes over /v1/check.
    overrides: Dict[str, Any] = {"grpc_address": f"127.0.0.1:{free_port()}"} if transport == "http" else {}
    client = make_client(session_id="conversation-1", **overrides)

    assert client.check("SessionCrm", "GetCustomer", {"id": "cus_42"}).transport == transport
    assert client.check("SessionWeb", "Fetch", {"url": "https://example.com/page"}).allowed
    with pytest.raises(PolicyDeniedError) as denied:
        client.check("SessionMail", "Send", MAIL)
    assert (denied.value.decision.policy, denied.value.decision.rule) == (policy, "no-way-out")

    # Another session of the same agent, named for one flow over the client's own: it read and fetched nothing.
    with session("conversation-2"):
        assert client.check("SessionMail", "Send", MAIL).allowed
        assert client.guard("SessionMail", "Send", MAIL, lambda: "sent") == "sent"
    # The agent's own scope (no session named) is another session too.
    assert make_client(**overrides).check("SessionMail", "Send", MAIL).allowed
    # The first session still remembers, guard() included: the mail is never sent.
    sent = []
    with pytest.raises(PolicyDeniedError):
        client.guard("SessionMail", "Send", MAIL, lambda: sent.append(1))
    assert sent == []


def test_a_session_named_for_a_flow_reaches_coroutines_guarded_in_it(policy: str, make_client: MakeClient) -> None:
    client = make_client()

    async def flow() -> str:
        with session("async-flow"):
            await client.guard_async("SessionCrm", "GetCustomer", {"id": "cus_7"}, lambda: asyncio.sleep(0, "customer"))
            await client.guard_async("SessionWeb", "Fetch", {"url": "https://example.com"}, lambda: asyncio.sleep(0, "page"))
            try:
                await client.guard_async("SessionMail", "Send", MAIL, lambda: asyncio.sleep(0, "sent"))
            except PolicyDeniedError as error:
                return error.decision.rule
            return "sent"

    assert asyncio.run(flow()) == "no-way-out"
    assert current_session() is None


@pytest.mark.parametrize("bad", ["", "has space", "x" * 129, "semi;colon"])
def test_a_session_id_the_gateway_would_refuse_is_refused_at_once(bad: str) -> None:
    with pytest.raises(ValueError, match="session_id must be 1 to 128 characters"):
        ClientOptions(gateway_url="http://127.0.0.1:1", api_key="k", agent_id="a", session_id=bad)
    with pytest.raises(ValueError, match="session_id must be 1 to 128 characters"):
        with session(bad):
            pass

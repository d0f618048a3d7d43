"""When the gateway is slow, gone or half-reachable: timeouts, failure modes, the HTTP fallback,
and the decision cache with its invalidation by the Subscribe stream."""

from __future__ import annotations

import time
from typing import Callable, Iterator

import pytest

from agentgov_sdk import Decision, GatewayError, GatewayTimeoutError, GatewayUnreachableError, PluginOptions, SoftDenial
from conftest import MakeClient
from gateway_process import Gateway, free_port
from relay import StalledServer, TcpRelay


@pytest.fixture
def stalled() -> Iterator[StalledServer]:
    server = StalledServer()
    yield server
    server.close()


def test_a_stalled_gateway_times_out_with_an_error_by_default(make_client: MakeClient, stalled: StalledServer) -> None:
    address = f"127.0.0.1:{stalled.port}"
    client = make_client(gateway_url=f"http://{address}", grpc_address=address, timeout_seconds=0.4)
    started = time.monotonic()
    with pytest.raises(GatewayTimeoutError):
        client.check("FilePlugin", "ReadFile", {"path": "/tmp/a"})
    assert 0.35 <= time.monotonic() - started < 2.0


def test_fail_closed_denies_a_timeout_whatever_throw_on_denied_says(make_client: MakeClient, stalled: StalledServer) -> None:
    """throw_on_denied says how a denial is shown, never whether a call runs (README "Failure modes")."""
    address = f"127.0.0.1:{stalled.port}"
    client = make_client(gateway_url=f"http://{address}", grpc_address=address, timeout_seconds=2,
                         plugins={"FilePlugin": PluginOptions(timeout_seconds=0.3, throw_on_denied=False)})
    ran = []
    denied = client.guard("FilePlugin", "ReadFile", {"path": "/tmp/a"}, lambda: ran.append(1))
    assert isinstance(denied, SoftDenial) and ran == []
    decision = client.check("FilePlugin", "ReadFile", {"path": "/tmp/a"})
    assert (decision.decision, decision.source, decision.reason) == ("deny", "timeout", "gRPC Evaluate: no answer within 0.3 s")
    assert client._audit.pending() == 2  # each denial waits to be sent to the trail


def test_fail_open_lets_a_timed_out_call_proceed(make_client: MakeClient, stalled: StalledServer) -> None:
    address = f"127.0.0.1:{stalled.port}"
    client = make_client(gateway_url=f"http://{address}", grpc_address=address, timeout_seconds=0.3, failure_mode="fail-open")
    assert client.guard("FilePlugin", "ReadFile", {"path": "/tmp/a"}, lambda: "ran") == "ran"
    decision = client.check("FilePlugin", "ReadFile", {"path": "/tmp/a"})
    assert (decision.allowed, decision.source) == (True, "timeout")
    assert client._audit.pending() == 2


def test_fail_closed_refuses_when_the_gateway_is_unreachable(make_client: MakeClient) -> None:
    dead = free_port()
    client = make_client(gateway_url=f"http://127.0.0.1:{dead}", grpc_address=f"127.0.0.1:{dead}")
    ran = []
    with pytest.raises(GatewayUnreachableError):
        client.guard("FilePlugin", "ReadFile", {"path": "/tmp/a"}, lambda: ran.append(1))
    assert ran == []


def test_fail_open_allows_and_its_audit_event_reaches_the_gateway_once_it_is_back(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    relay = TcpRelay(int(gateway.url.rsplit(":", 1)[1]))
    client = make_client(gateway_url=f"http://127.0.0.1:{relay.port}", grpc_address=f"127.0.0.1:{free_port()}",
                         failure_mode="fail-open", timeout_seconds=1)
    try:
        decision = client.check("FilePlugin", "ReadFile", {"path": "/etc/passwd"})
        assert (decision.allowed, decision.source) == (True, "fail-open")
        assert not client.flush(0.5)
        assert gateway.outcomes(agent_id) == []
        relay.start()
        assert client.flush(10)
        [outcome] = gateway.wait_for_outcomes(agent_id, 1)
        assert outcome["decision"] == "allow"
        assert outcome["action"] == "FilePlugin.ReadFile"
        assert outcome["details"]["resultSummary"].startswith("fail-open: allowed without a gateway decision")
    finally:
        relay.stop()


def test_grpc_down_falls_back_to_http(make_client: MakeClient) -> None:
    client = make_client(grpc_address=f"127.0.0.1:{free_port()}", throw_on_denied=False)
    allowed = client.check("FilePlugin", "ReadFile", {"path": "/tmp/a"})
    denied = client.check("FilePlugin", "ReadFile", {"path": "/etc/passwd"})
    assert (allowed.decision, allowed.transport, allowed.policy) == ("allow", "http", "block-sensitive-files")
    assert (denied.decision, denied.transport, denied.rule) == ("deny", "http", "system-paths")


def wait_for_live_cache(client_check: Callable[[], Decision], timeout: float = 5.0) -> Decision:
    """Checks until an answer comes from the cache (the change stream is open and caught up)."""
    deadline = time.monotonic() + timeout
    while (decision := client_check()).source != "cache":
        assert time.monotonic() < deadline, "no answer ever came from the cache"
        time.sleep(0.02)
    return decision


def test_a_cached_decision_ends_within_a_second_of_a_revocation(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    client = make_client()

    def ask() -> Decision:
        return client.check("FilePlugin", "ReadFile", {"path": "/tmp/cached"})

    first = ask()
    assert first.cacheable and first.cache_ttl_ms > 0
    cached = wait_for_live_cache(ask)
    assert cached.decision_id == first.decision_id or cached.policy == first.policy
    status, _ = gateway.admin("DELETE", f"/admin/agents/{agent_id}")
    assert status == 200
    revoked_at = time.monotonic()
    while True:
        try:
            decision = ask()
        except GatewayError as error:
            assert error.code == "permission_denied"
            break
        assert decision.source == "cache"
        assert time.monotonic() - revoked_at < 1.0, "the cache still answered a second after the revocation"
        time.sleep(0.01)
    assert time.monotonic() - revoked_at < 1.0


def test_a_policy_change_ends_cached_decisions(make_client: MakeClient, gateway: Gateway) -> None:
    client = make_client(throw_on_denied=False)

    def ask() -> Decision:
        return client.check("NotesPlugin", "Append", {"text": "x"})

    assert ask().allowed
    wait_for_live_cache(ask)
    gateway.put_policy("notes-closed", "name: notes-closed\nmatch: { plugin: NotesPlugin }\nrules:\n  - condition: \"true\"\n    action: deny\n    reason: Notes are closed\n")
    try:
        changed_at = time.monotonic()
        while (decision := ask()).source == "cache":
            assert time.monotonic() - changed_at < 1.0
            time.sleep(0.01)
        assert (decision.decision, decision.policy) == ("deny", "notes-closed")
    finally:
        gateway.admin("DELETE", "/admin/policies/notes-closed")


def test_the_cache_comes_back_after_the_gateways_versions_went_backwards(make_client: MakeClient) -> None:
    client = make_client()

    def ask() -> Decision:
        return client.check("FilePlugin", "ReadFile", {"path": "/tmp/restored"})

    wait_for_live_cache(ask)
    # What a gateway restored from an older backup leaves a client with: a newest version seen
    # that the organization has not reached. Resuming from it was refused every few seconds, and
    # no answer (all below it) was cached again until the organization passed it.
    client._cache._known_version = 10_000
    assert client._stream is not None
    client._stream.cancel()
    wait_for_live_cache(ask, timeout=15.0)
    assert client._cache.known_version < 10_000


def test_uncacheable_answers_are_asked_every_time(make_client: MakeClient) -> None:
    client = make_client()
    first = client.check("SearchPlugin", "Query", {"q": "a"})
    assert not first.cacheable
    time.sleep(0.3)
    assert [client.check("SearchPlugin", "Query", {"q": "a"}).source for _ in range(3)] == ["gateway"] * 3


class FailingPdp:
    """A gRPC server whose every call fails INTERNAL: a gateway with an unexpected fault (the
    gRPC face of an HTTP 500)."""

    def __init__(self) -> None:
        import grpc
        from concurrent import futures

        class Handler(grpc.GenericRpcHandler):  # type: ignore[misc]
            def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
                def fail(request: bytes, context: grpc.ServicerContext) -> bytes:
                    context.abort(grpc.StatusCode.INTERNAL, "Internal server error")
                    raise AssertionError("abort raises")
                return grpc.unary_unary_rpc_method_handler(fail)

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self._server.add_generic_rpc_handlers((Handler(),))
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    def close(self) -> None:
        self._server.stop(0)


@pytest.mark.parametrize("failure_mode", ["fail-open", "fail-closed"])
def test_an_internal_error_on_both_transports_is_a_failure_not_a_refusal(make_client: MakeClient, failure_mode: str) -> None:
    """As HTTP 5xx is (and as in the TypeScript SDK): fail-open allows, fail-closed raises GatewayUnreachableError."""
    failing = FailingPdp()
    try:
        client = make_client(gateway_url=f"http://127.0.0.1:{free_port()}", grpc_address=f"127.0.0.1:{failing.port}",
                             failure_mode=failure_mode, cache_enabled=False)
        if failure_mode == "fail-open":
            decision = client.check("FilePlugin", "ReadFile", {"path": "/tmp/a"})
            assert (decision.allowed, decision.source) == (True, "fail-open")
        else:
            with pytest.raises(GatewayUnreachableError):
                client.check("FilePlugin", "ReadFile", {"path": "/tmp/a"})
    finally:
        failing.close()

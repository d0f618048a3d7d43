"""The ASGI middleware as an upstream runs it: under uvicorn, behind the built gateway, which signs
the decision tokens it checks (docs/security.md "Decision tokens" in the repository)."""
from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any, Iterator, Tuple

import pytest
import uvicorn

from agentgov_sdk.decision_token import DecisionTokenMiddleware, Receive, Scope, Send
from gateway_process import Gateway, free_port, http_json, start_gateway

received: list[dict[str, str]] = []


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    message = await receive()
    headers = {name.decode(): value.decode() for name, value in scope["headers"]}
    received.append(headers)
    decision = scope["decision"]
    body = json.dumps({"action": decision.action, "decision_id": decision.decision_id, "body": message.get("body", b"").decode()}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def stack() -> Iterator[Tuple[Gateway, str, str]]:
    port = free_port()
    gateway = start_gateway("/dev/null", {"UPSTREAM_URL": f"http://127.0.0.1:{port}", "PUBLIC_URL": "http://gateway.python.test"})
    jwks = gateway.url + "/.well-known/jwks.json"
    verified = DecisionTokenMiddleware(echo, jwks_url=jwks, issuer="http://gateway.python.test")
    # Its clock two minutes ahead: every token it sees has expired.
    later = DecisionTokenMiddleware(echo, jwks_url=jwks, clock=lambda: time.time() + 120)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await (later if scope.get("path", "").startswith("/later") else verified)(scope, receive, send)

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    _, agent = gateway.admin("POST", "/admin/agents", {"name": "py-verified", "trustTier": "trusted"})
    try:
        yield gateway, f"http://127.0.0.1:{port}", agent["token"]
    finally:
        server.should_exit = True
        thread.join(10)
        gateway.stop()


def call(url: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None) -> Tuple[int, Any]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_accepts_the_governed_call_and_refuses_one_around_the_gateway(stack: Tuple[Gateway, str, str]) -> None:
    gateway, upstream, token = stack
    status, body = call(gateway.url + "/proxy/orders?id=7", "POST", b'{"item":"paper"}', {"authorization": f"Bearer {token}", "content-type": "application/json"})
    assert status == 200
    assert body["action"] == "write:orders" and body["decision_id"].startswith("aud_") and body["body"] == '{"item":"paper"}'
    status, body = call(upstream + "/orders?id=7", "POST", b'{"item":"paper"}')
    assert (status, body["problem"]) == (401, "missing")


def test_refuses_a_token_replayed_for_another_request(stack: Tuple[Gateway, str, str]) -> None:
    gateway, upstream, token = stack
    assert call(gateway.url + "/proxy/orders/1", headers={"authorization": f"Bearer {token}"})[0] == 200
    forwarded = received[-1]["x-service-decision-token"]
    for method, path in [("GET", "/orders/2"), ("GET", "/orders/1?all=1"), ("DELETE", "/orders/1")]:
        status, body = call(upstream + path, method, headers={"x-service-decision-token": forwarded})
        assert (status, body["problem"]) == (401, "wrong_request")


def test_refuses_an_expired_token(stack: Tuple[Gateway, str, str]) -> None:
    gateway, _, token = stack
    status, body = call(gateway.url + "/proxy/later/orders", headers={"authorization": f"Bearer {token}"})
    assert (status, body["problem"]) == (401, "expired")

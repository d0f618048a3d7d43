"""The ASGI middleware as an upstream runs it: under uvicorn, behind the built gateway, which signs
the decision tokens it checks (docs/security.md "Decision tokens" in the repository)."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import tempfile
import threading
import time
import urllib.request
from typing import Any, Iterator, Tuple

import pytest
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from agentgov_sdk.decision_token import DecisionTokenError, DecisionTokenMiddleware, DecisionTokenVerifier, Receive, Scope, Send
from counting_proxy import CountingProxy
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


def write_p256_key(path: str) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    with open(path, "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def header_of(token: str) -> dict[str, Any]:
    part = token.split("~")[0].split(".")[0]
    return dict(json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))))


def with_kid(token: str, kid: str) -> str:
    """The token with its JWS header naming another key (its signature then fits none)."""
    jws, claims, proof = token.split("~")
    segments = jws.split(".")
    header = header_of(token) | {"kid": kid}
    segments[0] = base64.urlsafe_b64encode(json.dumps(header).encode()).rstrip(b"=").decode()
    return "~".join([".".join(segments), claims, proof])


@pytest.fixture(scope="module")
def rotating() -> Iterator[Tuple[Gateway, str, str]]:
    """A gateway signing with a P-256 key of the test's own (SIGNING_KEY_FILE), forwarding to an
    upstream that records what it receives; the key file's directory is returned for a rotation."""
    port = free_port()
    key_dir = tempfile.mkdtemp(prefix="agentgov-sdk-python-key-")
    key_file = os.path.join(key_dir, "signing-key.pem")
    write_p256_key(key_file)
    gateway = start_gateway("/dev/null", {"UPSTREAM_URL": f"http://127.0.0.1:{port}", "PUBLIC_URL": "http://gateway.rotation.test", "SIGNING_KEY_FILE": key_file})

    async def record(scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        headers = {name.decode(): value.decode() for name, value in scope["headers"]}
        target = scope["raw_path"].decode() + (("?" + scope["query_string"].decode()) if scope.get("query_string") else "")
        recorded.append({"token": headers.get("x-service-decision-token", ""), "method": scope["method"], "target": target, "body": message.get("body", b"").decode()})
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    server = uvicorn.Server(uvicorn.Config(record, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    _, agent = gateway.admin("POST", "/admin/agents", {"name": "py-rotation", "trustTier": "trusted"})
    try:
        yield gateway, key_file, agent["token"]
    finally:
        server.should_exit = True
        thread.join(10)
        gateway.stop()
        shutil.rmtree(key_dir, ignore_errors=True)


recorded: list[dict[str, str]] = []


def forwarded(gateway: Gateway, token: str, path: str) -> dict[str, str]:
    assert call(gateway.url + "/proxy/" + path, headers={"authorization": f"Bearer {token}"})[0] == 200
    return recorded[-1]


def test_a_token_of_a_rotated_p256_key_verifies_after_one_refresh_and_made_up_keys_fetch_no_more(rotating: Tuple[Gateway, str, str]) -> None:
    gateway, key_file, agent_token = rotating
    jwks = CountingProxy(int(gateway.url.rsplit(":", 1)[1]))
    now = [time.time()]
    verifier = DecisionTokenVerifier(jwks_url=jwks.url + "/.well-known/jwks.json", issuer="http://gateway.rotation.test", clock=lambda: now[0])

    def verify(request: dict[str, str]) -> str:
        try:
            return asyncio.run(verifier.verify(request["token"], request["method"], request["target"], request["body"].encode())).action
        except DecisionTokenError as error:
            return error.problem

    def fetches() -> int:
        return jwks.requests.count("GET /.well-known/jwks.json")

    try:
        first = forwarded(gateway, agent_token, "orders/1")
        assert header_of(first["token"])["alg"] == "ES256"
        assert (verify(first), fetches()) == ("read:orders/1", 1)

        # The operator rotates the key: the gateway signs with the new one from its next start on.
        gateway.halt()
        write_p256_key(key_file)
        gateway.start_again()
        second = forwarded(gateway, agent_token, "orders/2")
        assert header_of(second["token"])["kid"] != header_of(first["token"])["kid"]
        assert header_of(second["token"])["alg"] == "ES256"

        # Within refresh_seconds of the last fetch the new key is not asked for; past it, one fetch brings it.
        assert (verify(second), fetches()) == ("unknown_key", 1)
        now[0] += 31
        assert (verify(second), fetches()) == ("read:orders/2", 2)
        assert (verify(first), fetches()) == ("read:orders/1", 2)

        # A key the gateway never had: refused after the one fetch it may make; more made-up keys within the interval fetch nothing.
        now[0] += 31
        assert (verify(second | {"token": with_kid(second["token"], "made-up-0")}), fetches()) == ("unknown_key", 3)
        for index in range(1, 21):
            assert verify(second | {"token": with_kid(second["token"], f"made-up-{index}")}) == "unknown_key"
        assert (verify(second), fetches()) == ("read:orders/2", 3)
    finally:
        jwks.close()

"""The two ways to the gateway: gRPC (default) and HTTP (/v1/check, /v1/audit)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Set, Tuple, cast
from urllib.parse import quote, urlsplit

import grpc
from google.protobuf import struct_pb2

from ._generated import pdp_pb2, pdp_pb2_grpc
from .decision import CheckRequest, Decision
from .errors import HTTP_STATUS_CODES, ErrorCode, GatewayError, GatewayTimeoutError, GatewayUnreachableError, retry_after_of

APPROVAL_STATUSES = ("pending", "approved", "rejected", "expired", "used")

GRPC_STATUS_CODES: Dict[grpc.StatusCode, ErrorCode] = {
    grpc.StatusCode.UNAUTHENTICATED: "unauthenticated",
    grpc.StatusCode.INVALID_ARGUMENT: "invalid_argument",
    grpc.StatusCode.NOT_FOUND: "not_found",
    grpc.StatusCode.PERMISSION_DENIED: "permission_denied",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "resource_exhausted",
}


def json_values(values: Mapping[str, Any]) -> Dict[str, Any]:
    """JSON values only (anything else as its str), as the HTTP transport would send them."""
    return cast(Dict[str, Any], json.loads(json.dumps(dict(values), default=str)))


def _struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(json_values(values))
    return message


class GrpcTransport:
    """Evaluate and Subscribe over one channel, with the API key as `x-api-key` metadata."""

    def __init__(self, address: str, api_key: str, secure: bool) -> None:
        credentials = grpc.ssl_channel_credentials() if secure else None
        self._channel = grpc.secure_channel(address, credentials) if credentials else grpc.insecure_channel(address)
        self._stub = pdp_pb2_grpc.PolicyDecisionPointStub(self._channel)  # type: ignore[no-untyped-call]
        self._metadata = (("x-api-key", api_key),)
        self._waiting: Set[Any] = set()

    def evaluate(self, request: CheckRequest, timeout: float) -> Decision:
        message = pdp_pb2.PolicyRequest(
            agent_id=request.agent_id, action=request.action, resource=request.resource,
            plugin=request.plugin, function=request.function, args=_struct(request.args),
            context=_struct(request.context), trust_tier=request.trust_tier, trace_id=request.trace_id,
            approval_id=request.approval_id, session_id=request.session_id,
        )
        try:
            answer = self._stub.Evaluate(message, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise GatewayTimeoutError(f"gRPC Evaluate: no answer within {timeout:g} s") from None
            raise grpc_error(error) from None
        pending = answer.decision == pdp_pb2.DECISION_PENDING
        return Decision(
            # Anything but an allow or a pending approval is a denial: an unknown decision never lets a call run.
            decision="allow" if answer.decision == pdp_pb2.DECISION_ALLOW else "pending" if pending else "deny",
            reason=answer.reason, policy=answer.policy, rule=answer.rule,
            policy_version=answer.policy_version, decision_id=answer.decision_id, trace_id=answer.trace_id,
            cacheable=answer.cacheable, cache_ttl_ms=answer.cache_ttl_ms, enforced=answer.enforced,
            transport="grpc",
            approval_id=answer.approval_id if pending else "",
            approval_expires_at=answer.approval_expires_at if pending else "",
        )

    def subscribe(self, since_version: int) -> "SubscriptionStream":
        """The change events after since_version, then each new one; cancel() ends it."""
        call = self._stub.Subscribe(pdp_pb2.PolicySubscription(since_version=since_version), metadata=self._metadata)
        return SubscriptionStream(call)

    def connected(self, timeout: float) -> bool:
        """Whether the channel is (or within `timeout` becomes) connected to the gateway."""
        ready = grpc.channel_ready_future(self._channel)
        self._waiting.add(ready)
        try:
            ready.result(timeout=timeout)
        except (grpc.FutureTimeoutError, grpc.FutureCancelledError):
            return False
        finally:
            self._waiting.discard(ready)
        return True

    def stop_waiting(self) -> None:
        """Ends every connected() wait at once (before close, which must not race a wait)."""
        for ready in list(self._waiting):
            ready.cancel()

    def close(self) -> None:
        self.stop_waiting()
        self._channel.close()


class SubscriptionStream:
    def __init__(self, call: Any) -> None:
        self._call = call

    def __iter__(self) -> Iterator[int]:
        """The policy_version of each change event."""
        for event in self._call:
            yield int(event.policy_version)

    def cancel(self) -> None:
        self._call.cancel()


def grpc_error(error: grpc.RpcError) -> GatewayError:
    code: grpc.StatusCode = error.code()
    details = str(error.details() or code.name)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return GatewayTimeoutError(f"gRPC: {details}")
    if code in GRPC_STATUS_CODES:
        trailers = dict(error.trailing_metadata() or ()) if hasattr(error, "trailing_metadata") else {}
        return GatewayError(GRPC_STATUS_CODES[code], details, retry_after=retry_after_of(trailers.get("retry-after")))
    if code == grpc.StatusCode.UNAVAILABLE:
        return GatewayUnreachableError(f"gRPC: {details}")
    # INTERNAL and the rest are a gateway that could not decide, as an HTTP 5xx is: the HTTP
    # fallback, then the failure mode apply (as in the TypeScript SDK), not a refusal.
    return GatewayUnreachableError(f"gRPC {code.name}: {details}")


class HttpTransport:
    """POST /v1/check and /v1/audit as JSON, one keep-alive connection per thread."""

    def __init__(self, gateway_url: str, api_key: str) -> None:
        parts = urlsplit(gateway_url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (443 if self._https else 80)
        self._base = parts.path.rstrip("/")
        self._api_key = api_key
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: Set[http.client.HTTPConnection] = set()

    def evaluate(self, request: CheckRequest, timeout: float) -> Decision:
        body: Dict[str, Any] = {
            "agentId": request.agent_id, "plugin": request.plugin, "function": request.function,
            "arguments": dict(request.args), "context": dict(request.context), "trustTier": request.trust_tier,
        }
        for name, value in (("action", request.action), ("resource", request.resource), ("traceId", request.trace_id), ("approvalId", request.approval_id),
                            ("sessionId", request.session_id)):
            if value:
                body[name] = value
        return Decision.from_check_json(self.post("/v1/check", body, timeout))

    def approval_status(self, approval_id: str, timeout: float) -> str:
        """GET /v1/approvals/:id: pending, approved, rejected, expired or used."""
        status = str(self._send("GET", f"/v1/approvals/{quote(approval_id, safe='')}", None, timeout).get("status"))
        if status not in APPROVAL_STATUSES:
            raise GatewayUnreachableError(f"HTTP /v1/approvals: unknown status {status[:40]}")
        return status

    def post(self, path: str, body: Mapping[str, Any], timeout: float) -> Dict[str, Any]:
        """The JSON answer of a 2xx; GatewayError (with the status) otherwise."""
        return self.post_encoded(path, json.dumps(body, default=str).encode("utf-8"), timeout)

    def post_encoded(self, path: str, body: bytes, timeout: float) -> Dict[str, Any]:
        """post() of a body already encoded as JSON."""
        return self._send("POST", path, body, timeout)

    def _send(self, method: str, path: str, data: Optional[bytes], timeout: float) -> Dict[str, Any]:
        status, payload = self._exchange(method, path, data, timeout)
        if 200 <= status < 300:
            return payload
        message = str(payload.get("message") or payload.get("error") or f"HTTP {status}")
        if status in HTTP_STATUS_CODES:
            raise GatewayError(HTTP_STATUS_CODES[status], message, status, retry_after_of(payload.get("retry_after")))
        raise GatewayUnreachableError(f"HTTP {status}: {message}", status)

    def _exchange(self, method: str, path: str, data: Optional[bytes], timeout: float) -> Tuple[int, Dict[str, Any]]:
        headers = {"x-api-key": self._api_key} if data is None else {"content-type": "application/json", "x-api-key": self._api_key}
        for attempt in (1, 2):
            connection = self._connection(timeout)
            try:
                connection.request(method, self._base + path, body=data, headers=headers)
                response = connection.getresponse()
                raw = response.read()
            except socket.timeout:
                self._drop()
                raise GatewayTimeoutError(f"HTTP: no answer from {path} within {timeout:g} s") from None
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
                # A kept-alive connection the server closed meanwhile: one fresh try.
                self._drop()
                if attempt == 2:
                    raise GatewayUnreachableError(f"HTTP: {error}") from None
                continue
            except OSError as error:
                self._drop()
                raise GatewayUnreachableError(f"HTTP: {error}") from None
            return response.status, _json_object(raw)
        raise AssertionError("unreachable")

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        connection: Optional[http.client.HTTPConnection] = getattr(self._local, "connection", None)
        if connection is None:
            factory: Callable[..., http.client.HTTPConnection] = (
                http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            )
            connection = factory(self._host, self._port, timeout=timeout)
            self._local.connection = connection
            with self._lock:
                self._open.add(connection)
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        return connection

    def _drop(self) -> None:
        connection: Optional[http.client.HTTPConnection] = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            with self._lock:
                self._open.discard(connection)
        self._local.connection = None

    def close(self) -> None:
        """Closes every thread's connection."""
        with self._lock:
            for connection in self._open:
                connection.close()
            self._open.clear()


def _json_object(raw: bytes) -> Dict[str, Any]:
    try:
        parsed = json.loads(raw.decode("utf-8")) if raw else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}

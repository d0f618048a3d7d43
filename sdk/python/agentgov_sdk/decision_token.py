"""Verifies the gateway's decision tokens (X-Service-Decision-Token) offline from its JWKS, and an
ASGI middleware that refuses calls without a valid one for exactly the request being served.

Format (docs/security.md "Decision tokens" in the gateway's repository): ``<JWS>~<claims>~<proof>``,
the JWS a JWT (``typ: decision-batch+jwt``) of a gateway key over ``{iss, iat, exp, dtr}``, ``dtr``
the root of a Merkle tree; the claims this decision's; the proof the sibling hashes up to the root.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, MutableMapping, Optional

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

BATCH_TYPE = "decision-batch+jwt"
#: Where an MCP ``tools/call`` forwarded by the gateway carries its decision token: ``params._meta``.
TOOL_CALL_META_KEY = "io.agentgov/decision-token"
#: The method a tool call's ``req`` hash names (its target is the tool's name).
TOOL_CALL_METHOD = "TOOLS/CALL"
SIDECAR_KEY_TYPE = "sidecar-key+jwt"
STEP_BYTES = 33
MAX_PROOF_STEPS = 16

PublicKey = Any


class DecisionTokenError(Exception):
    """A token that proves nothing for this request; ``problem`` says why."""

    def __init__(self, problem: str, message: str) -> None:
        super().__init__(message)
        self.problem = problem


@dataclass(frozen=True)
class VerifiedDecision:
    decision_id: str
    agent_id: str
    org_id: str
    action: str
    expires_at: float
    approval_id: Optional[str] = None
    sidecar_id: Optional[str] = None


def _b64(part: str, what: str) -> bytes:
    if not all(c.isalnum() or c in "-_" for c in part):
        raise DecisionTokenError("malformed", f"Malformed decision token: the {what} is not base64url")
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _json(part: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_b64(part, what))
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise DecisionTokenError("malformed", f"Malformed decision token: the {what} is not a JSON object")
    return value


def _import_key(jwk: dict[str, Any]) -> PublicKey:
    if jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519":
        return Ed25519PublicKey.from_public_bytes(_b64(str(jwk["x"]), "key"))
    if jwk.get("kty") == "EC" and jwk.get("crv") == "P-256":
        x = int.from_bytes(_b64(str(jwk["x"]), "key"), "big")
        y = int.from_bytes(_b64(str(jwk["y"]), "key"), "big")
        return ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
    raise DecisionTokenError("malformed", "Malformed decision token: a key is neither Ed25519 nor P-256")


def _keys_of(jwks: dict[str, Any]) -> dict[str, PublicKey]:
    keys: dict[str, PublicKey] = {}
    for jwk in jwks.get("keys", []) if isinstance(jwks, dict) else []:
        if isinstance(jwk, dict) and isinstance(jwk.get("kid"), str):
            try:
                keys[jwk["kid"]] = _import_key(jwk)
            except (DecisionTokenError, KeyError, ValueError):
                continue
    return keys


def _check_signature(segments: list[str], header: dict[str, Any], key: PublicKey) -> None:
    data = f"{segments[0]}.{segments[1]}".encode()
    signature = _b64(segments[2], "signature")
    try:
        if header.get("alg") == "EdDSA" and isinstance(key, Ed25519PublicKey):
            key.verify(signature, data)
        elif header.get("alg") == "ES256" and isinstance(key, ec.EllipticCurvePublicKey) and len(signature) == 64:
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            key.verify(der, data, ec.ECDSA(hashes.SHA256()))
        else:
            raise DecisionTokenError("bad_signature", f"Algorithm {header.get('alg')} does not fit key {header.get('kid')}")
    except InvalidSignature:
        raise DecisionTokenError("bad_signature", "The decision token's signature is not valid") from None


def _root_of(claims: bytes, proof: bytes) -> bytes:
    if len(proof) % STEP_BYTES != 0 or len(proof) // STEP_BYTES > MAX_PROOF_STEPS:
        raise DecisionTokenError("malformed", "Malformed decision token: the proof is not whole steps")
    node = hashlib.sha256(b"\x00" + claims).digest()
    for at in range(0, len(proof), STEP_BYTES):
        sibling = proof[at + 1 : at + STEP_BYTES]
        node = hashlib.sha256(b"\x01" + (sibling + node if proof[at] == 0 else node + sibling)).digest()
    return node


def _parameter_name(item: str) -> str:
    raw = item.split("=", 1)[0]
    return urllib.parse.unquote_plus(raw)


def request_hash(method: str, target: str, body: bytes, credential_parameter: Optional[str] = None) -> str:
    """The hash a token's ``req`` claim must equal; an injected query credential left out."""
    if credential_parameter is not None and "?" in target:
        path, query = target.split("?", 1)
        kept = "&".join(item for item in query.split("&") if _parameter_name(item) != credential_parameter)
        target = f"{path}?{kept}" if kept else path
    digest = hashlib.sha256(f"{method.upper()}\n{target}\n".encode() + body).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _number_text(value: float) -> str:
    """A number as ECMAScript's Number::toString writes it (RFC 8785 3.2.2.3): the shortest digits
    that read back as the same double (Python's repr finds them too), placed by ECMAScript's rules."""
    if value != value or value in (float("inf"), float("-inf")):
        raise DecisionTokenError("malformed", "Malformed tool call: a number in the arguments is not finite")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # The value is 0.<digits> x 10^point.
    point = len(whole) + int(exponent or 0) - (len(whole + fraction) - len((whole + fraction).lstrip("0")))
    digits = digits.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        return sign + digits + "0" * (point - count)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    shown = point - 1
    return sign + digits[0] + ("." + digits[1:] if count > 1 else "") + "e" + ("+" if shown >= 0 else "-") + str(abs(shown))


_SHORT_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _string_text(value: str) -> str:
    """A string as ECMAScript's JSON.stringify writes it (RFC 8785 3.2.2.2): only the quote, the
    backslash and controls below U+0020 escaped, and a lone surrogate as \\uXXXX."""
    out = ['"']
    for character in value:
        code = ord(character)
        if character in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[character])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(character)
    out.append('"')
    return "".join(out)


def _utf16_order(key: str) -> bytes:
    # Big-endian UTF-16 bytes compare as the code units do (RFC 8785 3.2.3), not as code points.
    return key.encode("utf-16-be", "surrogatepass")


def canonical_json(value: Any) -> str:
    """The RFC 8785 (JCS) text of a JSON value as ``json.loads`` gives it: object keys sorted by
    UTF-16 code units, numbers as ECMAScript writes them (integers past 2^53 rounded to a double,
    as the gateway reads them), no whitespace."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string_text(value)
    if isinstance(value, int):
        if -(2**53) <= value <= 2**53:
            return str(value)
        try:
            return _number_text(float(value))
        except OverflowError:
            raise DecisionTokenError("malformed", "Malformed tool call: a number in the arguments is not finite") from None
    if isinstance(value, float):
        return _number_text(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise DecisionTokenError("malformed", "Malformed tool call: an object key in the arguments is not a string")
        keys = sorted(value, key=_utf16_order)
        return "{" + ",".join(_string_text(key) + ":" + canonical_json(value[key]) for key in keys) + "}"
    raise DecisionTokenError("malformed", f"Malformed tool call: the arguments hold a {type(value).__name__}, not a JSON value")


def tool_call_hash(name: str, arguments: Optional[Mapping[str, Any]]) -> str:
    """The hash a tool call's token binds: ``request_hash("TOOLS/CALL", name, JCS(arguments or {}))``."""
    return request_hash(TOOL_CALL_METHOD, name, canonical_json(arguments if arguments is not None else {}).encode("utf-8", "surrogatepass"))


class DecisionTokenVerifier:
    """Verifies tokens against the gateway's JWKS (fetched from ``jwks_url`` at most every
    ``refresh_seconds`` for an unknown key, or given as ``jwks``). ``clock`` is the time in seconds
    since the epoch, for the expiries and the refresh interval both."""

    def __init__(self, *, jwks_url: Optional[str] = None, jwks: Optional[dict[str, Any]] = None, issuer: Optional[str] = None,
                 clock_tolerance_seconds: float = 5, refresh_seconds: float = 30, clock: Callable[[], float] = time.time) -> None:
        if (jwks_url is None) == (jwks is None):
            raise ValueError("DecisionTokenVerifier: give one of jwks_url and jwks")
        self._jwks_url = jwks_url
        self._keys = _keys_of(jwks) if jwks is not None else {}
        self._issuer = issuer
        self._tolerance = clock_tolerance_seconds
        self._refresh_seconds = refresh_seconds
        self._fetched_at = float("-inf")
        self._clock = clock

    async def verify(self, token: Optional[str], method: str, target: str, body: bytes = b"") -> VerifiedDecision:
        if not token:
            raise DecisionTokenError("missing", "No X-Service-Decision-Token: the call did not come through the gateway")
        return await self._verify(token, lambda cq: request_hash(method, target, body, cq))

    async def verify_tool_call(self, params: Mapping[str, Any]) -> VerifiedDecision:
        """The decision an MCP ``tools/call`` request's ``params`` (as parsed JSON: ``name``,
        ``arguments``, ``_meta``) carries in ``_meta["io.agentgov/decision-token"]``, for exactly
        that tool and those arguments; raises DecisionTokenError when it proves none."""
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        token = meta.get(TOOL_CALL_META_KEY) if isinstance(meta, Mapping) else None
        if not isinstance(token, str) or not token:
            raise DecisionTokenError("missing", f"No decision token in the tool call's _meta[{TOOL_CALL_META_KEY!r}]: the call did not come through the gateway")
        name = params.get("name")
        arguments = params.get("arguments")
        if not isinstance(name, str):
            raise DecisionTokenError("malformed", "Malformed tool call: params.name is not a string")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise DecisionTokenError("malformed", "Malformed tool call: params.arguments is not an object")
        # Canonicalised before the token is checked: arguments no JSON can hold are refused as such.
        expected = tool_call_hash(name, arguments)
        return await self._verify(token, lambda _cq: expected)

    async def _verify(self, token: str, expected_hash: Callable[[Optional[str]], str]) -> VerifiedDecision:
        parts = token.split("~")
        if len(parts) != 3:
            raise DecisionTokenError("malformed", "Malformed decision token: not <JWS>~<claims>~<proof>")
        segments = parts[0].split(".")
        if len(segments) != 3:
            raise DecisionTokenError("malformed", "Malformed decision token: the JWS is not compact")
        header = _json(segments[0], "header")
        if header.get("typ") != BATCH_TYPE:
            raise DecisionTokenError("malformed", f"Malformed decision token: typ is not {BATCH_TYPE}")
        now = self._clock()
        certified = await self._sidecar_key(header["sck"], now) if isinstance(header.get("sck"), str) else None
        key = certified[0] if certified is not None else await self._key(header.get("kid"))
        _check_signature(segments, header, key)
        batch = _json(segments[1], "payload")
        self._check_issuer(batch.get("iss"))
        if not isinstance(batch.get("exp"), (int, float)) or batch["exp"] + self._tolerance < now:
            raise DecisionTokenError("expired", "The decision token has expired")
        claims_bytes = _b64(parts[1], "claims")
        if not isinstance(batch.get("dtr"), str) or _root_of(claims_bytes, _b64(parts[2], "proof")) != _b64(batch["dtr"], "root"):
            raise DecisionTokenError("bad_signature", "The decision claims are not those the gateway signed")
        try:
            claims = json.loads(claims_bytes)
        except ValueError:
            raise DecisionTokenError("malformed", "Malformed decision token: the claims are not JSON") from None
        if not isinstance(claims, dict) or not all(isinstance(claims.get(name), str) for name in ("jti", "sub", "org", "act", "req")) or not isinstance(claims.get("exp"), (int, float)):
            raise DecisionTokenError("malformed", "Malformed decision token: the claims lack a field")
        if claims["exp"] + self._tolerance < now:
            raise DecisionTokenError("expired", "The decision token has expired")
        if certified is not None and certified[1] != claims["org"]:
            raise DecisionTokenError("bad_signature", "The sidecar is not of the decision's organization")
        cq = claims.get("cq")
        if expected_hash(cq if isinstance(cq, str) else None) != claims["req"]:
            raise DecisionTokenError("wrong_request", f"The decision token is for another request (decision {claims['jti']})")
        apr = claims.get("apr")
        return VerifiedDecision(claims["jti"], claims["sub"], claims["org"], claims["act"], float(claims["exp"]),
                                apr if isinstance(apr, str) else None, certified[2] if certified is not None else None)

    def _check_issuer(self, iss: Any) -> None:
        if self._issuer is not None and iss != self._issuer:
            raise DecisionTokenError("wrong_issuer", f"The decision token is of another issuer ({iss})")

    async def _sidecar_key(self, certificate: str, now: float) -> tuple[PublicKey, str, str]:
        segments = certificate.split(".")
        if len(segments) != 3:
            raise DecisionTokenError("malformed", "Malformed decision token: the sidecar key certificate is not a compact JWS")
        header = _json(segments[0], "certificate header")
        if header.get("typ") != SIDECAR_KEY_TYPE:
            raise DecisionTokenError("malformed", f"Malformed decision token: the certificate's typ is not {SIDECAR_KEY_TYPE}")
        _check_signature(segments, header, await self._key(header.get("kid")))
        payload = _json(segments[1], "certificate")
        self._check_issuer(payload.get("iss"))
        if not isinstance(payload.get("exp"), (int, float)) or payload["exp"] + self._tolerance < now:
            raise DecisionTokenError("expired", "The sidecar key certificate has expired")
        jwk = payload.get("cnf", {}).get("jwk") if isinstance(payload.get("cnf"), dict) else None
        if not isinstance(payload.get("org"), str) or not isinstance(payload.get("sub"), str) or not isinstance(jwk, dict):
            raise DecisionTokenError("malformed", "Malformed decision token: the certificate names no organization, sidecar or key")
        return _import_key(jwk), payload["org"], payload["sub"]

    async def _key(self, kid: Any) -> PublicKey:
        if not isinstance(kid, str):
            raise DecisionTokenError("malformed", "Malformed decision token: no kid")
        if kid not in self._keys and self._jwks_url is not None and self._clock() - self._fetched_at >= self._refresh_seconds:
            self._fetched_at = self._clock()
            try:
                self._keys = await asyncio.to_thread(self._fetch)
            except (OSError, ValueError):
                pass
        if kid not in self._keys:
            raise DecisionTokenError("unknown_key", f"No key {kid} in the gateway's JWKS")
        return self._keys[kid]

    def _fetch(self) -> dict[str, PublicKey]:
        assert self._jwks_url is not None
        with urllib.request.urlopen(self._jwks_url, timeout=5) as answer:  # noqa: S310 (the configured gateway URL)
            return _keys_of(json.loads(answer.read()))


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class DecisionTokenMiddleware:
    """ASGI middleware: HTTP requests pass only with a valid X-Service-Decision-Token for their
    method, target and body (read whole, up to ``max_body_bytes``, then replayed to the app), the
    decision put in ``scope["decision"]``; refusals are 401 ``{error: "decision_token_invalid",
    problem, message}``."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int = 10 * 1024 * 1024, **verifier_options: Any) -> None:
        self._app = app
        self._verifier = DecisionTokenVerifier(**verifier_options)
        self._max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body_bytes:
                await _refuse(send, 413, "malformed", f"Body larger than {self._max_body_bytes} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        raw_path = scope.get("raw_path") or scope["path"].encode()
        target = raw_path.decode("latin-1") + (("?" + scope["query_string"].decode("latin-1")) if scope.get("query_string") else "")
        token = next((value.decode("latin-1") for name, value in scope.get("headers", []) if name.lower() == b"x-service-decision-token"), None)
        try:
            scope["decision"] = await self._verifier.verify(token, scope["method"], target, body)
        except DecisionTokenError as error:
            await _refuse(send, 401, error.problem, str(error))
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self._app(scope, replay, send)


async def _refuse(send: Send, status: int, problem: str, message: str) -> None:
    body = json.dumps({"error": "decision_token_invalid", "problem": problem, "message": message}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})

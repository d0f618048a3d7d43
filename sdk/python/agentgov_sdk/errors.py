"""The SDK's errors: a policy denial, and the gateway failing or refusing to answer."""

from __future__ import annotations

from typing import Literal

from .decision import Decision

ErrorCode = Literal[
    "unauthenticated", "invalid_argument", "not_found", "permission_denied",
    "resource_exhausted", "unavailable", "timeout", "internal",
]


class AgentGovError(Exception):
    """Base of every error the SDK raises."""


class PolicyDeniedError(AgentGovError):
    """A policy denied the call (raised when throw_on_denied is on)."""

    def __init__(self, plugin: str, function: str, decision: Decision) -> None:
        by = f" by {decision.policy}" if decision.policy else ""
        super().__init__(f"{plugin}.{function} denied{by}: {decision.reason}")
        self.plugin = plugin
        self.function = function
        self.decision = decision


class GatewayError(AgentGovError):
    """The gateway refused the request (bad key, unknown or revoked agent, rate limit, bad input)
    or could not be reached. `code` names which; `status` is the HTTP status when there was one."""

    def __init__(self, code: ErrorCode, message: str, status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.status = status


class GatewayUnreachableError(GatewayError):
    """Neither transport reached a gateway that could answer (connection refused, 5xx, UNAVAILABLE)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__("unavailable", message, status)


class GatewayTimeoutError(GatewayError):
    """The gateway did not answer within timeout_seconds."""

    def __init__(self, message: str) -> None:
        super().__init__("timeout", message)


HTTP_STATUS_CODES: dict[int, ErrorCode] = {
    400: "invalid_argument",
    401: "unauthenticated",
    403: "permission_denied",
    404: "not_found",
    413: "invalid_argument",
    415: "invalid_argument",
    429: "resource_exhausted",
}

"""The SDK's errors: a policy denial, and the gateway failing or refusing to answer."""

from __future__ import annotations

from typing import Literal, Optional

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


class ApprovalPendingError(PolicyDeniedError):
    """check() with throw_on_denied: a `require_approval` rule holds the call until a person
    decides (docs/approvals.md). A PolicyDeniedError, so code that stops on a denial stops here
    too; wait with Client.wait_for_approval(approval_id), then check again with approval_id.
    guard() waits itself instead of raising this."""

    def __init__(self, plugin: str, function: str, decision: Decision) -> None:
        super().__init__(plugin, function, decision)
        self.args = (f"{plugin}.{function} needs approval {decision.approval_id} ({decision.policy}: {decision.reason})",)
        self.approval_id = decision.approval_id
        self.expires_at = decision.approval_expires_at


class GatewayError(AgentGovError):
    """The gateway refused the request (bad key, unknown or revoked agent, rate limit, bad input)
    or could not be reached. `code` names which; `status` is the HTTP status when there was one;
    `retry_after` the seconds until a retry can pass, for a tripped rate limit."""

    def __init__(self, code: ErrorCode, message: str, status: int = 0, retry_after: Optional[int] = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        # What happened, without the code: the text a failure-mode audit event quotes.
        self.detail = message
        self.status = status
        self.retry_after = retry_after


def retry_after_of(value: object) -> Optional[int]:
    """Whole seconds from a `retry-after` trailer (text) or a body's `retry_after` (number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, (str, bytes)):
        text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
        return int(text) if text.isascii() and text.isdigit() else None
    return None


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

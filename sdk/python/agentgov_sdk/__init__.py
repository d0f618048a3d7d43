"""Agent Governance adapter SDK: check tool calls against the gateway's policies, audit them."""

from .client import Client, summary_of
from .decision import CheckRequest, Decision, SoftDenial
from .errors import AgentGovError, ApprovalPendingError, GatewayError, GatewayTimeoutError, GatewayUnreachableError, PolicyDeniedError
from .options import ClientOptions, FailureMode, PluginOptions
from .session import current_session, session

__all__ = [
    "AgentGovError", "ApprovalPendingError", "CheckRequest", "Client", "ClientOptions", "Decision", "FailureMode", "GatewayError",
    "GatewayTimeoutError", "GatewayUnreachableError", "PluginOptions", "PolicyDeniedError", "SoftDenial", "current_session", "session",
    "summary_of",
]

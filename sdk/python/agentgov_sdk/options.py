"""The client's options: the adapter options (README "Options"), in Python's casing, and per-plugin overrides."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping, Optional
from urllib.parse import urlsplit

from .session import check_session_id

FailureMode = Literal["fail-closed", "fail-open"]
# When an audit event is durable: "batch" once per audit window (one fsync for the window's
# events, just before they are sent: a crash of the machine, not of the process, loses at most the
# last audit_flush_interval_seconds of events), "sync" before audit() and guard() return.
AuditDurability = Literal["batch", "sync"]
MAX_AUDIT_BATCH = 500

DEFAULT_GRPC_PORT = 50051
# The longest approval_wait_seconds: a guarded call blocks its caller for as long as it waits.
MAX_APPROVAL_WAIT_SECONDS = 3600


@dataclass(frozen=True)
class PluginOptions:
    """Overrides for one plugin's calls; None keeps the client's value."""

    trust_tier: Optional[str] = None
    timeout_seconds: Optional[float] = None
    throw_on_denied: Optional[bool] = None


@dataclass(frozen=True)
class ClientOptions:
    """How a Client reaches the gateway and what it does with the answers (see README.md)."""

    gateway_url: str
    api_key: str
    agent_id: str
    default_trust_tier: str = "standard"
    throw_on_denied: bool = True
    timeout_seconds: float = 5.0
    plugins: Mapping[str, PluginOptions] = field(default_factory=dict)
    failure_mode: FailureMode = "fail-closed"
    grpc_address: Optional[str] = None
    cache_enabled: bool = True
    cache_max_entries: int = 10_000
    # The write-ahead file, for this client alone. None: a file of its own in audit_wal_dir
    # (removed on close when empty), and the agent's files there that no live client holds
    # (those of processes that ended) are sent too.
    audit_wal_path: Optional[str] = None
    # Where the default write-ahead files are kept; None: $XDG_STATE_HOME/agentgov.
    audit_wal_dir: Optional[str] = None
    audit_durability: AuditDurability = "batch"
    audit_batch_size: int = 50
    audit_flush_interval_seconds: float = 1.0
    grpc_retry_seconds: float = 5.0
    # How long guard() waits for a person to decide a call a `require_approval` rule holds
    # (docs/approvals.md); 0 does not wait (the pending call is denied at once).
    approval_wait_seconds: float = 300.0
    # The session the calls belong to (docs/policies.md "Sessions"); None: the agent's own scope.
    # session() names one for the calls of a flow instead.
    session_id: Optional[str] = None

    def __post_init__(self) -> None:
        for name in ("gateway_url", "api_key", "agent_id"):
            if not getattr(self, name):
                raise ValueError(f"{name} is required")
        if urlsplit(self.gateway_url).scheme not in ("http", "https"):
            raise ValueError("gateway_url must be an http:// or https:// URL")
        if self.failure_mode not in ("fail-closed", "fail-open"):
            raise ValueError("failure_mode must be 'fail-closed' or 'fail-open'")
        if self.timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be greater than 0")
        for plugin, overrides in self.plugins.items():
            if overrides.timeout_seconds is not None and overrides.timeout_seconds <= 0:
                raise ValueError(f"plugins[{plugin!r}].timeout_seconds must be greater than 0")
        # Whole numbers: a batch of 1.5 events killed the sending thread (a slice of a float),
        # and a negative cache size made every check raise KeyError.
        if not _whole(self.audit_batch_size) or not 1 <= self.audit_batch_size <= MAX_AUDIT_BATCH:
            raise ValueError(f"audit_batch_size must be a whole number from 1 to {MAX_AUDIT_BATCH} (the most one POST /v1/audit takes)")
        if self.audit_durability not in ("batch", "sync"):
            raise ValueError("audit_durability must be 'batch' or 'sync'")
        if not _whole(self.cache_max_entries) or self.cache_max_entries < 0:
            raise ValueError("cache_max_entries must be a whole number of at least 0")
        if not 0 <= self.approval_wait_seconds <= MAX_APPROVAL_WAIT_SECONDS:
            raise ValueError(f"approval_wait_seconds must be between 0 and {MAX_APPROVAL_WAIT_SECONDS}")
        if self.audit_flush_interval_seconds <= 0:
            raise ValueError("audit_flush_interval_seconds must be greater than 0")
        if self.session_id is not None:
            check_session_id(self.session_id, "session_id")

    def resolved_grpc_address(self) -> str:
        """The gRPC address: grpc_address, else the gateway URL's host on port 50051."""
        if self.grpc_address:
            return self.grpc_address
        host = urlsplit(self.gateway_url).hostname or "localhost"
        return f"[{host}]:{DEFAULT_GRPC_PORT}" if ":" in host else f"{host}:{DEFAULT_GRPC_PORT}"

    def for_plugin(self, plugin: str) -> "EffectiveOptions":
        """The options a call to `plugin` runs under, overrides applied."""
        overrides = self.plugins.get(plugin, PluginOptions())
        return EffectiveOptions(
            trust_tier=overrides.trust_tier if overrides.trust_tier is not None else self.default_trust_tier,
            timeout_seconds=overrides.timeout_seconds if overrides.timeout_seconds is not None else self.timeout_seconds,
            throw_on_denied=overrides.throw_on_denied if overrides.throw_on_denied is not None else self.throw_on_denied,
        )


@dataclass(frozen=True)
class EffectiveOptions:
    trust_tier: str
    timeout_seconds: float
    throw_on_denied: bool


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)

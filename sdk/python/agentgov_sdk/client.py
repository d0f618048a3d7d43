"""The adapter client: check before a tool call, audit after it, or guard() to do both."""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
import json
import logging
import math
import numbers
import os
import secrets
import threading
import time
from dataclasses import replace
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, Awaitable, Callable, Coroutine, Dict, List, Mapping, Optional, ParamSpec, Tuple, Type, TypeVar, Union, cast, overload
from urllib.parse import urlsplit

import grpc

from .audit import AuditBatcher, AuditEvent, EncodedEvent, Orphan, WriteAheadLog, batch_body, claim_orphans
from .cache import DecisionCache, request_hash
from .decision import CheckRequest, Decision, DecisionSource, SoftDenial
from .errors import ApprovalPendingError, GatewayError, GatewayTimeoutError, GatewayUnreachableError, PolicyDeniedError
from .options import MAX_APPROVAL_WAIT_SECONDS, ClientOptions, EffectiveOptions
from .session import current_session
from .transports import GrpcTransport, HttpTransport

logger = logging.getLogger("agentgov_sdk")

T = TypeVar("T")
P = ParamSpec("P")
Summarize = Callable[[Any], str]

# The first pause between two asks of an approval's status, doubled after each up to the second.
FIRST_APPROVAL_POLL_SECONDS = 0.25
MAX_APPROVAL_POLL_SECONDS = 5.0

MAX_SUMMARY = 2048
MAX_DURATION_MS = 86_400_000


class Client:
    """One agent's connection to the gateway. Use it as a context manager (or call close()):
    closing sends the audit events still queued, within timeout_seconds."""

    def __init__(self, options: ClientOptions) -> None:
        self.options = options
        wal, orphans = _open_wal(options)
        secure = urlsplit(options.gateway_url).scheme == "https"
        self._grpc = GrpcTransport(options.resolved_grpc_address(), options.api_key, secure)
        self._http = HttpTransport(options.gateway_url, options.api_key)
        self._grpc_down_until = 0.0
        # Event ids: this client's random prefix and a count, unique without a system call per event.
        self._event_prefix = secrets.token_hex(12)
        self._event_count = itertools.count()
        self._cache = DecisionCache(options.cache_max_entries)
        self._closed = threading.Event()
        self._audit = AuditBatcher(
            wal,
            self._send_audit,
            options.audit_batch_size,
            options.audit_flush_interval_seconds,
            options.audit_durability,
            orphans,
        )
        self._stream: Any = None
        self._follower: Optional[threading.Thread] = None
        if options.cache_enabled:
            self._follower = threading.Thread(target=self._follow_changes, name="agentgov-subscribe", daemon=True)
            self._follower.start()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException], trace: Optional[TracebackType]) -> None:
        self.close()

    def check(
        self, plugin: str, function: str, args: Optional[Mapping[str, Any]] = None, *,
        context: Optional[Mapping[str, Any]] = None, action: str = "", resource: str = "", trace_id: str = "",
        approval_id: str = "",
    ) -> Decision:
        """Asks whether the agent may call plugin.function with args. Raises PolicyDeniedError on a
        denial unless throw_on_denied is off (then the Decision says deny).

        A call a `require_approval` rule holds is `pending` (docs/approvals.md): ApprovalPendingError
        with throw_on_denied (its approval_id and expires_at), else a Decision with decision
        "pending", approval_id and approval_expires_at. Wait with wait_for_approval(), then check the
        identical call again with approval_id=..., which the approval lets through once. guard()
        does all of that itself."""
        effective = self.options.for_plugin(plugin)
        request = self._request(plugin, function, args, context, effective, action, resource, trace_id, approval_id)
        decision = self._decide(request, effective)
        if decision.allowed and decision.source in ("timeout", "fail-open"):
            self._record(request, decision, 0.0, _without_answer(decision))
        if decision.denied and effective.throw_on_denied:
            raise _denial(plugin, function, decision)
        return decision

    def wait_for_approval(self, approval_id: str, wait_seconds: Optional[float] = None) -> str:
        """Waits, at most wait_seconds (default approval_wait_seconds, capped at 3600), for a person
        to decide the approval a pending check opened, asking GET /v1/approvals/:id with a growing
        pause between asks (0.25 s doubling to 5 s). Returns its status: "approved" (check the
        identical call again with it), "rejected", "expired", "used", or "pending" when the wait
        ended first. Asking spends nothing: only the retry uses the approval. Raises GatewayError
        when the gateway refuses to say (an approval unknown in the key's organization)."""
        wait = self.options.approval_wait_seconds if wait_seconds is None else wait_seconds
        deadline = time.monotonic() + min(max(wait, 0.0), MAX_APPROVAL_WAIT_SECONDS)
        pause = FIRST_APPROVAL_POLL_SECONDS
        while True:
            try:
                status = self._http.approval_status(approval_id, self.options.timeout_seconds)
            except (GatewayUnreachableError, GatewayTimeoutError) as error:
                # An outage while waiting is waited out like a pending answer: the deadline still bounds it.
                logger.info("approval %s: status unknown for now: %s", approval_id, error)
                status = "pending"
            left = deadline - time.monotonic()
            if status != "pending" or left <= 0 or self._closed.is_set():
                return status
            if self._closed.wait(min(pause, left)):
                return status
            pause = min(pause * 2, MAX_APPROVAL_POLL_SECONDS)

    def audit(
        self, plugin: str, function: str, *, decision: str, duration_ms: float,
        args: Optional[Mapping[str, Any]] = None, result_summary: Optional[str] = None,
        decision_id: str = "", trace_id: str = "",
    ) -> str:
        """Records what became of a call (in the write-ahead file before returning, durable as
        audit_durability says); sent in the next batch, stamped with now. Returns the event's id."""
        return self._audit_event(plugin, function, decision, duration_ms, args, result_summary, decision_id, trace_id, cached=False)

    def _audit_event(
        self, plugin: str, function: str, decision: str, duration_ms: float, args: Optional[Mapping[str, Any]],
        result_summary: Optional[str], decision_id: str, trace_id: str, cached: bool,
    ) -> str:
        if decision not in ("allow", "deny"):
            raise ValueError("decision must be 'allow' or 'deny'")
        event: AuditEvent = {
            "eventId": f"{self._event_prefix}-{next(self._event_count)}", "agentId": self.options.agent_id, "plugin": plugin, "function": function,
            "arguments": _recordable(args or {}), "decision": decision,
            "durationMs": 0.0 if math.isnan(duration_ms) else round(min(max(duration_ms, 0.0), MAX_DURATION_MS), 3),
            "occurredAt": _now_iso(),
        }
        if cached:
            event["cached"] = True
        for name, value in (("resultSummary", (result_summary or "")[:MAX_SUMMARY]), ("decisionId", decision_id), ("traceId", trace_id)):
            if value:
                event[name] = value
        self._audit.record(event)
        return cast(str, event["eventId"])

    def guard(
        self, plugin: str, function: str, args: Mapping[str, Any], call: Callable[[], T], *,
        context: Optional[Mapping[str, Any]] = None, summarize: Optional[Summarize] = None,
    ) -> Union[T, SoftDenial]:
        """Checks, runs `call` when allowed, and audits it with its duration and a result summary.
        A denial raises PolicyDeniedError, or returns a SoftDenial when throw_on_denied is off.

        A call a `require_approval` rule holds waits, at most approval_wait_seconds, for a person to
        decide (docs/approvals.md); approved, the identical call is checked again with the approval,
        which lets it through once, and runs; rejected, expired or not decided in time, it is a
        denial as above, its reason saying which."""
        effective = self.options.for_plugin(plugin)
        request = self._request(plugin, function, args, context, effective)
        decision = self._decide(request, effective)
        if decision.pending:
            decision = self._after_approval(request, decision, effective)
        if decision.denied:
            if effective.throw_on_denied:
                raise _denial(plugin, function, decision)
            return SoftDenial(decision)
        started = time.perf_counter()
        try:
            result = call()
        except BaseException as error:
            self._record(request, decision, _elapsed_ms(started), _flagged(decision, _raised(error)))
            raise
        self._record(request, decision, _elapsed_ms(started), _flagged(decision, (summarize or summary_of)(result)))
        return result

    async def guard_async(
        self, plugin: str, function: str, args: Mapping[str, Any], call: Callable[[], Awaitable[T]], *,
        context: Optional[Mapping[str, Any]] = None, summarize: Optional[Summarize] = None,
    ) -> Union[T, SoftDenial]:
        """guard() for a coroutine; the gateway calls and the file write run in a worker thread (and
        so does the wait for a pending approval)."""
        effective = self.options.for_plugin(plugin)
        request = self._request(plugin, function, args, context, effective)
        decision = await asyncio.to_thread(self._decide, request, effective)
        if decision.pending:
            decision = await asyncio.to_thread(self._after_approval, request, decision, effective)
        if decision.denied:
            if effective.throw_on_denied:
                raise _denial(plugin, function, decision)
            return SoftDenial(decision)
        started = time.perf_counter()
        try:
            result = await call()
        except BaseException as error:
            await asyncio.to_thread(self._record, request, decision, _elapsed_ms(started), _flagged(decision, _raised(error)))
            raise
        await asyncio.to_thread(self._record, request, decision, _elapsed_ms(started), _flagged(decision, (summarize or summary_of)(result)))
        return result

    def guarded(
        self, plugin: str, function: Optional[str] = None, *,
        context: Optional[Mapping[str, Any]] = None, summarize: Optional[Summarize] = None,
    ) -> "GuardDecorator":
        """guard() as a decorator: the function's bound arguments are the call's args; `function`
        defaults to the decorated function's name. Works on coroutine functions too."""
        return GuardDecorator(self, plugin, function, context, summarize)

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Sends the queued audit events now; True when the gateway has acknowledged them all."""
        return self._audit.flush(self.options.timeout_seconds if timeout is None else timeout)

    def close(self) -> None:
        """Stops following changes, sends the queued audit events (what is left stays in the
        write-ahead file for the next start) and closes the connections."""
        if self._closed.is_set():
            return
        self._closed.set()
        stream = self._stream
        if stream is not None:
            stream.cancel()
        self._audit.close(self.options.timeout_seconds)
        self._grpc.stop_waiting()
        if self._follower is not None:
            self._follower.join(1.0)
        self._grpc.close()
        self._http.close()

    @property
    def cache(self) -> DecisionCache:
        return self._cache

    def _request(
        self, plugin: str, function: str, args: Optional[Mapping[str, Any]], context: Optional[Mapping[str, Any]],
        effective: EffectiveOptions, action: str = "", resource: str = "", trace_id: str = "", approval_id: str = "",
    ) -> CheckRequest:
        return CheckRequest(
            agent_id=self.options.agent_id, plugin=plugin, function=function, args=dict(args or {}),
            context=dict(context or {}), trust_tier=effective.trust_tier, action=action, resource=resource, trace_id=trace_id,
            approval_id=approval_id, session_id=current_session() or self.options.session_id or "",
        )

    def _after_approval(self, request: CheckRequest, pending: Decision, effective: EffectiveOptions) -> Decision:
        """A pending call's outcome: its approval waited for, then, once approved, the identical call
        asked again with it; rejected, expired, used, or a wait that ended first is a denial saying why."""
        approval_id = pending.approval_id
        status = self.wait_for_approval(approval_id)
        if status == "approved":
            return self._decide(replace(request, approval_id=approval_id), effective)
        why = (f"was not decided within the {self.options.approval_wait_seconds:g} s guard() waits (approval_wait_seconds)"
               if status == "pending" else f"is {status}")
        return replace(pending, decision="deny", reason=f"Approval {approval_id} {why}: {pending.reason}")

    def _decide(self, request: CheckRequest, effective: EffectiveOptions) -> Decision:
        # An answer to an approval is never cacheable, and a cached answer must not stand in for presenting one.
        key = request_hash(request) if self.options.cache_enabled and not request.approval_id else ""
        cached = self._cache.get(key) if key else None
        if cached is not None:
            self._record_reuse(request, cached)
            return cached
        try:
            decision = self._evaluate(request, effective.timeout_seconds)
        except GatewayTimeoutError as error:
            # throw_on_denied says how a denial is shown, never whether a call runs: without a
            # decision only fail-open lets it run (sdk/fixtures/decision-cases.json, `timeouts`).
            if self.options.failure_mode == "fail-open":
                return self._fail_open("timeout", error)
            denied = Decision.without_answer("timeout", "deny", error.detail)
            # The gateway never saw the call: the denial is on the trail through this event.
            self._record(request, denied, 0.0, _without_answer(denied))
            return denied
        except GatewayUnreachableError as error:
            if self.options.failure_mode == "fail-open":
                return self._fail_open("fail-open", error)
            raise
        if key:
            self._cache.put(key, decision)
        return decision

    def _record_reuse(self, request: CheckRequest, decision: Decision) -> None:
        """A cached decision applied: an event of its own (cached, naming the decision reused),
        so every decision the client applies, a cached denial too, reaches the trail."""
        if decision.pending:
            return
        self._audit_event(request.plugin, request.function, decision.decision, 0.0, request.args, None,
                          decision.decision_id, decision.trace_id or request.trace_id, cached=True)

    def _evaluate(self, request: CheckRequest, timeout: float) -> Decision:
        """gRPC, or HTTP when gRPC cannot connect (then HTTP only, for grpc_retry_seconds)."""
        deadline = time.monotonic() + timeout
        if time.monotonic() >= self._grpc_down_until:
            try:
                return self._grpc.evaluate(request, timeout)
            except GatewayUnreachableError as error:
                logger.info("gRPC unreachable, using HTTP for %.0f s: %s", self.options.grpc_retry_seconds, error)
                self._grpc_down_until = time.monotonic() + self.options.grpc_retry_seconds
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise GatewayTimeoutError(f"no answer within {timeout:g} s")
        return self._http.evaluate(request, remaining)

    def _fail_open(self, source: DecisionSource, error: GatewayError) -> Decision:
        logger.warning("fail-open: allowing a call without a gateway decision: %s", error)
        return Decision.without_answer(source, "allow", error.detail)

    def _record(self, request: CheckRequest, decision: Decision, duration_ms: float, summary: str) -> None:
        self.audit(
            request.plugin, request.function, decision=decision.decision, duration_ms=duration_ms, args=request.args,
            result_summary=summary, decision_id=decision.decision_id, trace_id=decision.trace_id or request.trace_id,
        )

    def _send_audit(self, events: List[EncodedEvent]) -> None:
        self._http.post_encoded("/v1/audit", batch_body(events), self.options.timeout_seconds)

    def _follow_changes(self) -> None:
        """Keeps a Subscribe stream open (resuming after the newest version seen); each change
        ends the entries decided before it. While the stream is down the cache is off and
        empty, since changes would go unseen."""
        backoff = 0.2
        while not self._closed.is_set():
            self._stream = self._grpc.subscribe(self._cache.known_version)
            # The gateway sends nothing on the stream until a change, so a connected channel
            # (that the stream's request went out on) is the sign the stream is open.
            self._cache.set_live(self._grpc.connected(self.options.timeout_seconds))
            try:
                for version in self._stream:
                    self._cache.changed(version)
                    backoff = 0.2
            except grpc.RpcError as error:  # the stream ended: the gateway went away or we closed it
                logger.debug("change stream ended: %s", error)
                if error.code() == grpc.StatusCode.INVALID_ARGUMENT:
                    # The version we resume from is ahead of the organization's (its database
                    # was restored from a backup): resuming from it is refused every time, and
                    # answers below it were never cached. Start again from nothing.
                    self._cache.restart()
            except Exception as error:
                logger.debug("change stream ended: %s", error)
            self._cache.set_live(False)
            if self._closed.wait(backoff):
                return
            backoff = min(backoff * 2, 5.0)


class GuardDecorator:
    """What Client.guarded() returns: wraps a tool function in guard() (or guard_async())."""

    def __init__(self, client: Client, plugin: str, function: Optional[str],
                 context: Optional[Mapping[str, Any]], summarize: Optional[Summarize]) -> None:
        self._client, self._plugin, self._function = client, plugin, function
        self._context, self._summarize = context, summarize

    # A coroutine function matches both; the first (checked first) is the right answer for it.
    @overload
    def __call__(self, tool: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, Union[T, SoftDenial]]]: ...  # type: ignore[misc]

    @overload
    def __call__(self, tool: Callable[P, T]) -> Callable[P, Union[T, SoftDenial]]: ...

    def __call__(self, tool: Callable[P, Any]) -> Callable[P, Any]:
        name = self._function or tool.__name__
        client, plugin, context, summarize = self._client, self._plugin, self._context, self._summarize
        arguments = _argument_binder(tool)
        if inspect.iscoroutinefunction(tool):
            @functools.wraps(tool)
            async def guarded_coroutine(*args: P.args, **kwargs: P.kwargs) -> Any:
                return await client.guard_async(plugin, name, arguments(*args, **kwargs), lambda: cast(Awaitable[Any], tool(*args, **kwargs)), context=context, summarize=summarize)

            return guarded_coroutine

        @functools.wraps(tool)
        def guarded_call(*args: P.args, **kwargs: P.kwargs) -> Any:
            return client.guard(plugin, name, arguments(*args, **kwargs), lambda: tool(*args, **kwargs), context=context, summarize=summarize)

        return guarded_call


def _argument_binder(tool: Callable[..., Any]) -> Callable[..., Dict[str, Any]]:
    """The call's args by parameter name (keyword catch-alls flattened, self and cls left out)."""
    signature = inspect.signature(tool)

    def arguments(*args: Any, **kwargs: Any) -> Dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        flat: Dict[str, Any] = {}
        for key, value in bound.arguments.items():
            if signature.parameters[key].kind is inspect.Parameter.VAR_KEYWORD:
                flat.update(value)
            elif key not in ("self", "cls"):
                flat[key] = value
        return flat

    return arguments


def summary_of(result: Any) -> str:
    """The default result summary: the result's shape, never its content (which may be
    sensitive), in the words every SDK uses (sdk/fixtures/result-summaries.json states the rule;
    the TypeScript and .NET SDKs write the same text for the same value)."""
    if result is None:
        return "returned null"
    if isinstance(result, bool):
        return "returned boolean"
    if isinstance(result, numbers.Number):
        return "returned number"
    if isinstance(result, str):
        return f"returned string of {_counted(len(result), 'character')}"
    if isinstance(result, (bytes, bytearray, memoryview)):
        return f"returned binary of {_counted(memoryview(result).nbytes, 'byte')}"
    if isinstance(result, Mapping):
        return f"returned object of {_counted(len(result), 'key')}"
    if isinstance(result, (list, tuple, set, frozenset)):
        return f"returned list of {_counted(len(result), 'item')}"
    return f"returned {type(result).__name__}"


def _denial(plugin: str, function: str, decision: Decision) -> Exception:
    """What a denial raises with throw_on_denied: a timeout's denial is the timeout itself."""
    if decision.source == "timeout":
        return GatewayTimeoutError(decision.reason)
    return ApprovalPendingError(plugin, function, decision) if decision.pending else PolicyDeniedError(plugin, function, decision)


def _without_answer(decision: Decision) -> str:
    """The audit text of a decision the client made itself (sdk/fixtures/result-summaries.json)."""
    verb = "allowed" if decision.allowed else "denied"
    return f"{decision.source}: {verb} without a gateway decision ({decision.reason})"


def _raised(error: BaseException) -> str:
    """The summary of a call that raised: the error's type, never its message (which may quote
    the call's data)."""
    return f"raised {type(error).__name__}"


def _counted(count: int, unit: str) -> str:
    return f"{count} {unit}{'' if count == 1 else 's'}"


def default_wal_dir() -> str:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "agentgov")


def _open_wal(options: ClientOptions) -> Tuple[WriteAheadLog, List[Orphan]]:
    """audit_wal_path, or a new file of this client's own in the default directory with the files
    there that ended processes left for the agent, whose events it takes over."""
    if options.audit_wal_path:
        return WriteAheadLog(options.audit_wal_path), []
    directory = options.audit_wal_dir or default_wal_dir()
    wal = WriteAheadLog.of_this_client(directory, options.agent_id)
    return wal, claim_orphans(directory, options.agent_id, wal.path)


def _now_iso() -> str:
    """Now as ISO 8601 in UTC with milliseconds: the event's occurredAt."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _recordable(args: Mapping[str, Any]) -> Dict[str, Any]:
    """The call's arguments as JSON can carry them: JSON has no NaN or Infinity, and an event
    holding one was refused by the gateway and dropped. The call already ran, so its record
    keeps them, as the strings "NaN", "Infinity" and "-Infinity"."""
    return cast(Dict[str, Any], json.loads(json.dumps(dict(args), default=str), parse_constant=str))


def _flagged(decision: Decision, summary: str) -> str:
    """A call that ran without a gateway decision says so in its audit event."""
    if decision.source in ("timeout", "fail-open"):
        return f"{_without_answer(decision)}; {summary}"
    return summary


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000

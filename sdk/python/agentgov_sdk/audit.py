"""Audit events: written ahead to a local file, then sent to POST /v1/audit in batches.

The write-ahead file is JSON lines: `{"event": {...}}` when an event is recorded (fsynced before
audit() returns) and `{"ack": [eventId, ...]}` when the gateway has taken events. On start the
events without an ack are sent again; the gateway records each eventId once, so a crash at any
point loses nothing and doubles nothing.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from .errors import ErrorCode, GatewayError

logger = logging.getLogger("agentgov_sdk")

AuditEvent = Dict[str, Any]
SendEvent = Callable[[AuditEvent], None]

COMPACT_BYTES = 1 << 20
# Refusals a resend cannot change (a malformed event, an agent the organization does not have).
PERMANENT_REFUSALS: frozenset[ErrorCode] = frozenset({"invalid_argument", "not_found"})
MAX_BACKOFF_SECONDS = 30.0


class WriteAheadLog:
    """The local file of events not yet acknowledged; one process at a time (an exclusive lock)."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self._file = open(path, "a+b")
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.close()
            raise RuntimeError(f"the audit write-ahead file {path} is in use by another process; give each client its own audit_wal_path") from None

    def unacknowledged(self) -> List[AuditEvent]:
        """The events written but never acknowledged, in the order written."""
        self._file.seek(0)
        events: Dict[str, AuditEvent] = {}
        for line in self._file.read().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line torn by a crash mid-write was never acknowledged to anyone
            if "event" in record:
                events[record["event"]["eventId"]] = record["event"]
            for event_id in record.get("ack", []):
                events.pop(event_id, None)
        return list(events.values())

    def append_event(self, event: AuditEvent) -> None:
        self._append({"event": event}, sync=True)

    def append_ack(self, event_ids: List[str]) -> None:
        # No fsync: an ack lost in a crash only means a resend, which the gateway ignores.
        self._append({"ack": event_ids}, sync=False)

    def compact(self, pending: List[AuditEvent]) -> None:
        """Rewrites the file with only the pending events (empty when all are acknowledged)."""
        if not pending:
            self._file.truncate(0)
            os.fsync(self._file.fileno())
            return
        temporary = f"{self.path}.compact"
        with open(temporary, "wb") as out:
            for event in pending:
                out.write(_line({"event": event}))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.path)
        previous = self._file
        self._file = open(self.path, "a+b")
        fcntl.flock(self._file.fileno(), fcntl.LOCK_EX)
        previous.close()
        _fsync_directory(self.path)

    def size(self) -> int:
        return os.fstat(self._file.fileno()).st_size

    def close(self) -> None:
        self._file.close()

    def _append(self, record: Dict[str, Any], sync: bool) -> None:
        self._file.write(_line(record))
        self._file.flush()
        if sync:
            os.fsync(self._file.fileno())


class AuditBatcher:
    """Queues events (written ahead first) and sends them from a background thread.

    A batch goes out when `batch_size` events wait or every `interval` seconds. An event the
    gateway refuses as malformed (400, 404 unknown agent) is dropped with a warning, since
    resending cannot fix it; any other failure keeps it for the next round, backing off.
    """

    def __init__(self, wal: WriteAheadLog, send: SendEvent, batch_size: int, interval: float) -> None:
        self._wal = wal
        self._send = send
        self._batch_size = batch_size
        self._interval = interval
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._acked = threading.Condition(self._lock)
        self._pending: List[AuditEvent] = wal.unacknowledged()
        self._wal.compact(self._pending)
        self._closing = False
        self._wal_closed = False
        self._backoff = 0.0
        self._thread = threading.Thread(target=self._run, name="agentgov-audit", daemon=True)
        self._thread.start()

    def record(self, event: AuditEvent) -> None:
        """Durably queues the event: on return it is on disk and will reach the gateway."""
        with self._lock:
            if self._closing:
                raise RuntimeError("the client is closed")
            self._wal.append_event(event)
            self._pending.append(event)
            if len(self._pending) >= self._batch_size:
                self._wake.notify()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self, timeout: float) -> bool:
        """Sends what waits now; True when nothing is left unacknowledged."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._wake.notify_all()
            while self._pending and not self._closing:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._acked.wait(remaining)
            return not self._pending

    def close(self, timeout: float) -> None:
        """Sends what it can within `timeout`; the rest stays in the file for the next start."""
        self.flush(timeout)
        with self._lock:
            self._closing = True
            self._wake.notify()
        self._thread.join(timeout)
        with self._lock:
            self._wal.close()
            self._wal_closed = True

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closing:
                    return
                if self._backoff or len(self._pending) < self._batch_size:
                    self._wake.wait(self._backoff or self._interval)
                if self._closing:
                    return
                batch = list(self._pending[: self._batch_size])
            if batch:
                self._send_batch(batch)

    def _send_batch(self, batch: List[AuditEvent]) -> None:
        done: List[str] = []
        failure: Optional[Exception] = None
        for event in batch:
            try:
                self._send(event)
            except GatewayError as error:
                if error.code not in PERMANENT_REFUSALS:
                    failure = error
                    break
                logger.warning("audit event %s dropped: the gateway refused it (%s)", event["eventId"], error)
            except Exception as error:  # noqa: BLE001 (whatever it was, the event stays for a retry)
                failure = error
                break
            done.append(event["eventId"])
        if failure is None:
            self._backoff = 0.0
        else:
            self._backoff = min(MAX_BACKOFF_SECONDS, max(self._interval, self._backoff * 2 or 0.2))
            logger.info("audit events kept for a retry in %.1f s: %s", self._backoff, failure)
        if done:
            self._acknowledge(done)

    def _acknowledge(self, event_ids: List[str]) -> None:
        with self._lock:
            if self._wal_closed:
                return  # close() gave up waiting; the next start resends these, and they count once
            acked = set(event_ids)
            self._pending = [event for event in self._pending if event["eventId"] not in acked]
            if not self._pending or self._wal.size() > COMPACT_BYTES:
                self._wal.compact(self._pending)
            else:
                self._wal.append_ack(event_ids)
            self._acked.notify_all()


def _line(record: Dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode("utf-8")


def _fsync_directory(path: str) -> None:
    descriptor = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)

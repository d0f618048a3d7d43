"""Audit events: written ahead to a local file, then sent to POST /v1/audit in batch bodies.

The write-ahead file is JSON lines: `{"event": {...}}` when an event is recorded and
`{"ack": [eventId, ...]}` when the gateway has taken events. An event is written (handed to the
operating system) before audit() returns, so a crash of the process loses nothing; it is durable
once fsynced: with `batch` durability once per audit window, one fsync for all the window's
events just before they are sent (a crash of the machine loses at most the last window's), with
`sync` before audit() returns. On start the events without an ack are sent again; the gateway
records each eventId once, so a crash at any point doubles nothing.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import logging
import os
import re
import secrets
import threading
import time
from typing import IO, Any, Callable, Dict, List, Literal, Optional, Tuple

from .errors import ErrorCode, GatewayError

logger = logging.getLogger("agentgov_sdk")

AuditEvent = Dict[str, Any]
# An event's JSON, encoded once when it is recorded: the same bytes go into the write-ahead line
# and into every batch body that carries it (the sender thread encodes nothing, and so holds the
# interpreter lock, which the calls being governed need, for less).
EncodedEvent = bytes
# Sends one POST /v1/audit batch of encoded events.
SendEvents = Callable[[List[EncodedEvent]], None]
AuditDurability = Literal["batch", "sync"]

# The most events one POST /v1/audit takes.
MAX_AUDIT_BATCH = 500

# The file is rewritten with only the unacknowledged events once this much, and more than the
# last rewrite wrote, was appended since: each byte is rewritten a bounded number of times, so the
# cost per event does not grow with the backlog (rewriting at every acknowledgement once the
# file passed a size rewrote the whole backlog per batch while the gateway was behind).
COMPACT_BYTES = 4 << 20
# Refusals a resend cannot change (a malformed event, an agent the organization does not have).
PERMANENT_REFUSALS: frozenset[ErrorCode] = frozenset({"invalid_argument", "not_found"})
MAX_BACKOFF_SECONDS = 30.0


class WriteAheadLog:
    """The local file of events not yet acknowledged; one client at a time (an exclusive flock,
    which ends with the process that holds it)."""

    def __init__(self, path: str, remove_when_empty: bool = False, opened: Optional[IO[bytes]] = None) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self._remove_when_empty = remove_when_empty
        self._unsynced = False
        # Bytes appended since the file was last rewritten, and how many that rewrite wrote.
        self._appended = 0
        self._rewritten = 0
        if opened is not None:
            self._file = opened
            return
        self._file = open(path, "a+b")
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.close()
            raise RuntimeError(f"the audit write-ahead file {path} is in use by another process; give each client its own audit_wal_path") from None

    @classmethod
    def of_this_client(cls, directory: str, agent_id: str) -> "WriteAheadLog":
        """A new file of this client's own in `directory` (`audit-<agent>-<pid>-<random>.wal`),
        locked before it takes its name, so no one ever sees it unlocked; removed on close when
        nothing is left in it."""
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"{_agent_prefix(agent_id)}-{os.getpid()}-{secrets.token_hex(4)}.wal")
        opened = open(f"{path}.new", "a+b")
        fcntl.flock(opened.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(f"{path}.new", path)
        return cls(path, remove_when_empty=True, opened=opened)

    def unacknowledged(self) -> List[AuditEvent]:
        """The events written but never acknowledged, in the order written."""
        self._file.seek(0)
        return _unacknowledged(self._file.read())

    def append_event(self, event: EncodedEvent, sync: bool) -> None:
        self._append(_event_line(event), sync=sync)

    def append_ack(self, event_ids: List[str]) -> None:
        # No fsync: an ack lost in a crash only means a resend, which the gateway ignores.
        self._append(_line({"ack": event_ids}), sync=False)

    def sync_handle(self) -> Optional[int]:
        """A descriptor to fsync what was appended so far (the caller closes it), or None when
        everything is already durable: the fsync then runs without holding the client's lock."""
        if not self._unsynced:
            return None
        self._unsynced = False
        return os.dup(self._file.fileno())

    def compact(self, pending: List[EncodedEvent]) -> None:
        """Rewrites the file with only the pending events (empty when all are acknowledged). The
        new file is locked before it takes the name, so no other client can take it over."""
        self._appended = self._rewritten = 0
        if not pending:
            self._file.truncate(0)
            self._unsynced = True
            return
        temporary = f"{self.path}.compact"
        replacement = open(temporary, "a+b")
        for event in pending:
            self._rewritten += replacement.write(_event_line(event))
        replacement.flush()
        os.fsync(replacement.fileno())
        fcntl.flock(replacement.fileno(), fcntl.LOCK_EX)
        os.replace(temporary, self.path)
        previous, self._file = self._file, replacement
        previous.close()
        _fsync_directory(self.path)

    def wants_compaction(self) -> bool:
        """True once more was appended since the last rewrite than COMPACT_BYTES and than that rewrite wrote."""
        return self._appended > max(COMPACT_BYTES, self._rewritten)

    def close(self, empty: bool) -> None:
        """Makes the file durable and releases it; a file of this client's own goes when empty."""
        self._file.flush()
        os.fsync(self._file.fileno())
        if empty and self._remove_when_empty:
            os.unlink(self.path)
        self._file.close()

    def _append(self, line: bytes, sync: bool) -> None:
        self._appended += len(line)
        self._file.write(line)
        self._file.flush()
        if sync:
            os.fsync(self._file.fileno())
        else:
            self._unsynced = True


class Orphan:
    """An agent's write-ahead file that no live client holds (its process ended, or closed with
    events unsent), locked by this client until it has moved the events into its own."""

    def __init__(self, path: str, handle: IO[bytes]) -> None:
        self.path = path
        self._handle = handle

    def events(self) -> List[AuditEvent]:
        self._handle.seek(0)
        return _unacknowledged(self._handle.read())

    def remove(self) -> None:
        os.unlink(self.path)
        self._handle.close()


def claim_orphans(directory: str, agent_id: str, own: str) -> List[Orphan]:
    """The agent's files in `directory` that no live client holds: each locked (a file whose
    lock is taken is in use), and checked to still be the file of that name after locking (a
    client that took it first has removed it)."""
    prefix = _agent_prefix(agent_id)
    pattern = re.compile(re.escape(prefix) + r"(-[0-9]+-[0-9a-f]{8})?\.wal")
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    claimed: List[Orphan] = []
    for name in names:
        path = os.path.join(directory, name)
        if path == own or not pattern.fullmatch(name):
            continue
        try:
            handle = open(path, "rb")
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(path).st_ino != os.fstat(handle.fileno()).st_ino:
                raise FileNotFoundError(path)
        except (BlockingIOError, FileNotFoundError):
            handle.close()
            continue
        claimed.append(Orphan(path, handle))
    return claimed


def _agent_prefix(agent_id: str) -> str:
    """`audit-<agent id>`, the id's characters other than letters, digits, `_` and `.` as `_`."""
    return "audit-" + re.sub(r"[^A-Za-z0-9_.]", "_", agent_id)


def _unacknowledged(text: bytes) -> List[AuditEvent]:
    events: Dict[str, AuditEvent] = {}
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line torn by a crash mid-write was never acknowledged to anyone
        if "event" in record:
            events[record["event"]["eventId"]] = record["event"]
        for event_id in record.get("ack", []):
            events.pop(event_id, None)
    return list(events.values())


class AuditBatcher:
    """Queues events (written ahead first) and sends them from a background thread, in batch
    bodies of POST /v1/audit.

    A batch goes out when `batch_size` events wait or every `interval` seconds, after one fsync
    of the write-ahead file for everything recorded since the last (`batch` durability; `sync`
    fsyncs each event before record() returns). A batch the gateway refuses as malformed (400,
    404 unknown agent) is sent again in halves, so only the events it refuses are dropped (with
    a warning: resending cannot fix them); any other failure keeps the batch for the next round,
    backing off. `orphans` are files of ended processes: their events are moved into `wal` first.
    """

    def __init__(self, wal: WriteAheadLog, send: SendEvents, batch_size: int, interval: float,
                 durability: AuditDurability = "batch", orphans: Optional[List[Orphan]] = None) -> None:
        self._wal = wal
        self._send = send
        self._batch_size = min(batch_size, MAX_AUDIT_BATCH)
        self._interval = interval
        self._sync = durability == "sync"
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._acked = threading.Condition(self._lock)
        # By eventId, oldest first: an acknowledgement removes each event in O(1), whatever the backlog.
        self._pending: Dict[str, EncodedEvent] = {event["eventId"]: encoded(event) for event in wal.unacknowledged()}
        for orphan in orphans or []:
            self._pending.update((event["eventId"], encoded(event)) for event in orphan.events())
        self._wal.compact(list(self._pending.values()))
        for orphan in orphans or []:
            orphan.remove()
        self._closing = False
        self._wal_closed = False
        # Set by flush(): the sender goes on without waiting, even if the notify came while it was busy sending.
        self._flush_requested = False
        self._backoff = 0.0
        self._thread = threading.Thread(target=self._run, name="agentgov-audit", daemon=True)
        self._thread.start()

    def record(self, event: AuditEvent) -> None:
        """Queues the event: on return it is in the write-ahead file (fsynced with `sync`
        durability) and will reach the gateway."""
        line = encoded(event)
        with self._lock:
            if self._closing:
                raise RuntimeError("the client is closed")
            self._wal.append_event(line, sync=self._sync)
            self._pending[event["eventId"]] = line
            if len(self._pending) >= self._batch_size:
                self._wake.notify()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self, timeout: float) -> bool:
        """Sends what waits now; True when nothing is left unacknowledged."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._flush_requested = True
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
            self._wal.close(empty=not self._pending)
            self._wal_closed = True

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closing:
                    return
                if self._backoff or (len(self._pending) < self._batch_size and not self._flush_requested):
                    self._wake.wait(self._backoff or self._interval)
                if self._closing:
                    return
                batch = list(itertools.islice(self._pending.items(), self._batch_size))
                if len(batch) == len(self._pending):
                    self._flush_requested = False  # this batch takes all that flush() asked for
                descriptor = self._wal.sync_handle()
            if descriptor is not None:
                self._fsync(descriptor)
            if batch:
                self._send_batch(batch)

    def _fsync(self, descriptor: int) -> None:
        """The window's one fsync, outside the lock: record() goes on meanwhile."""
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _send_batch(self, batch: List[Tuple[str, EncodedEvent]]) -> None:
        done, failure = self._deliver(batch)
        if failure is None:
            self._backoff = 0.0
        else:
            self._backoff = min(MAX_BACKOFF_SECONDS, max(self._interval, self._backoff * 2 or 0.2))
            logger.info("audit events kept for a retry in %.1f s: %s", self._backoff, failure)
        if done:
            self._acknowledge(done)

    def _deliver(self, events: List[Tuple[str, EncodedEvent]]) -> Tuple[List[str], Optional[Exception]]:
        """Sends `events` (by eventId) as one batch; the eventIds done (sent, or refused for
        good), and the failure that stopped it, if any. A refused batch is sent again in halves."""
        try:
            self._send([event for _, event in events])
            return [event_id for event_id, _ in events], None
        except GatewayError as error:
            if error.code not in PERMANENT_REFUSALS:
                return [], error
            if len(events) == 1:
                logger.warning("audit event %s dropped: the gateway refused it (%s)", events[0][0], error)
                return [events[0][0]], None
        except Exception as error:  # noqa: BLE001 (whatever it was, the events stay for a retry)
            return [], error
        middle = (len(events) + 1) // 2
        first, failure = self._deliver(events[:middle])
        if failure is not None:
            return first, failure
        second, failure = self._deliver(events[middle:])
        return first + second, failure

    def _acknowledge(self, event_ids: List[str]) -> None:
        with self._lock:
            if self._wal_closed:
                return  # close() gave up waiting; the next start resends these, and they count once
            for event_id in event_ids:
                self._pending.pop(event_id, None)
            if not self._pending or self._wal.wants_compaction():
                self._wal.compact(list(self._pending.values()))
            else:
                self._wal.append_ack(event_ids)
            self._acked.notify_all()


def encoded(event: AuditEvent) -> EncodedEvent:
    """The event's JSON, as the write-ahead file and the batch bodies carry it."""
    return json.dumps(event, separators=(",", ":"), default=str).encode("utf-8")


def batch_body(events: List[EncodedEvent]) -> bytes:
    """The POST /v1/audit body of a batch: `{"events": [...]}`, from the events' own bytes."""
    return b'{"events":[' + b",".join(events) + b"]}"


def _event_line(event: EncodedEvent) -> bytes:
    """`{"event": {...}}`, byte for byte what encoding the record whole would give."""
    return b'{"event":' + event + b"}\n"


def _line(record: Dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode("utf-8")


def _fsync_directory(path: str) -> None:
    descriptor = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)

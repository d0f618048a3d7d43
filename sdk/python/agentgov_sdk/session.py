"""The session a flow's governed calls belong to (docs/policies.md "Sessions" in the repository)."""

from __future__ import annotations

import contextlib
import re
from contextvars import ContextVar
from typing import Iterator, Optional

# What the gateway takes as a session id: 1 to 128 characters of A-Z a-z 0-9 . _ : -
_SESSION_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_current: ContextVar[Optional[str]] = ContextVar("agentgov_session", default=None)


def check_session_id(session_id: str, name: str) -> str:
    """The id, or ValueError naming `name` when the gateway would refuse it."""
    if not isinstance(session_id, str) or _SESSION_ID.fullmatch(session_id) is None:
        raise ValueError(f"{name} must be 1 to 128 characters of A-Z a-z 0-9 . _ : -")
    return session_id


@contextlib.contextmanager
def session(session_id: str) -> Iterator[str]:
    """Names `session_id` as the session of every check made inside the block (a conversation,
    a request), over the client's session_id option; the session named before applies again
    after it. A context variable: asyncio tasks and asyncio.to_thread carry it, a thread started
    inside the block does not. A session id is the caller's claim: for a protection an agent
    must not escape, label the agent itself (`scope: agent`)."""
    token = _current.set(check_session_id(session_id, "session_id"))
    try:
        yield session_id
    finally:
        _current.reset(token)


def current_session() -> Optional[str]:
    """The session named for the current flow by session(), or None."""
    return _current.get()

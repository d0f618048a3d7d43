"""The decision cache: keyed by the policy version and a hash of the request, emptied on change."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from typing import Optional, Tuple

from .decision import CheckRequest, Decision


def request_hash(request: CheckRequest) -> str:
    """A stable hash of everything a decision can depend on (trace id excluded)."""
    material = [request.agent_id, request.plugin, request.function, request.action, request.resource,
                request.trust_tier, request.session_id, request.args, request.context]
    encoded = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


class DecisionCache:
    """Reuses cacheable decisions for their cache_ttl_ms, while the Subscribe stream is live.

    Bound: max_entries (cache_max_entries, default 10,000). Eviction: least recently used (an
    OrderedDict: a hit moves its entry to the end, a put past the bound pops the first); an
    expired entry goes when it is next asked for. Cost: get and put O(1) whatever came before; a
    change event or the stream's end empties it in one clear().

    `known_version` is the newest policy version seen (from answers or change events); entries
    are looked up under it, a decision made on an older version is never stored, and a change
    event drops every entry decided before it, so no answer outlives a change that could alter it. While the stream is down nothing is cached:
    without it a revocation would go unnoticed until the TTL ran out.
    """

    def __init__(self, max_entries: int) -> None:
        self._max_entries = max_entries
        self._entries: "OrderedDict[Tuple[int, str], Tuple[float, Decision]]" = OrderedDict()
        self._lock = threading.Lock()
        self._known_version = 0
        self._live = False

    @property
    def known_version(self) -> int:
        return self._known_version

    def get(self, key: str) -> Optional[Decision]:
        with self._lock:
            if not self._live:
                return None
            entry = self._entries.get((self._known_version, key))
            if entry is None:
                return None
            expires_at, decision = entry
            if time.monotonic() >= expires_at:
                del self._entries[(self._known_version, key)]
                return None
            self._entries.move_to_end((self._known_version, key))
            return decision

    def put(self, key: str, decision: Decision) -> None:
        with self._lock:
            if decision.policy_version > self._known_version:
                self._entries.clear()
                self._known_version = decision.policy_version
            if not (self._live and decision.cacheable and decision.cache_ttl_ms > 0):
                return
            if decision.policy_version < self._known_version:
                return
            expires_at = time.monotonic() + decision.cache_ttl_ms / 1000
            self._entries[(decision.policy_version, key)] = (expires_at, replace(decision, source="cache"))
            self._entries.move_to_end((decision.policy_version, key))
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def changed(self, policy_version: int) -> None:
        """A change event: every entry decided before it is stale (an answer's policy_version
        already includes every change up to it, so a replayed older event ends nothing). Every
        entry is of known_version (put() keeps no other), so a newer version ends them all."""
        with self._lock:
            if policy_version > self._known_version:
                self._entries.clear()
                self._known_version = policy_version

    def restart(self) -> None:
        """Forgets every entry and the versions seen: the gateway's went backwards."""
        with self._lock:
            self._entries.clear()
            self._known_version = 0

    def set_live(self, live: bool) -> None:
        with self._lock:
            self._live = live
            if not live:
                self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

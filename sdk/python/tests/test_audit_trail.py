"""What reaches the gateway's trail, and how (README "Audit events"): every decision the client
applies, cached ones as decision entries naming the decision reused; events in batch bodies,
stamped with when the call happened; the default write-ahead file of each client its own, so two
processes of one application, or two clients in one, both work, and the files of a process that
ended are sent by the next one to start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from typing import Any, Dict, List

from conftest import MakeClient
from counting_proxy import CountingProxy
from gateway_process import Gateway
from test_resilience import wait_for_live_cache

APP = os.path.join(os.path.dirname(__file__), "app_child.py")


def entries(gateway: Gateway, agent_id: str) -> List[Dict[str, Any]]:
    status, body = gateway.admin("GET", f"/admin/audit?limit=1000&agentId={agent_id}")
    assert status == 200, body
    return list(body["entries"])


def wait_for(gateway: Gateway, agent_id: str, count: int, which: str = "outcome", timeout: float = 10.0) -> List[Dict[str, Any]]:
    """The agent's entries of kind `which` (`cached`: decision entries applied from a cache) once
    `count` arrived, then a moment more (to see any extra)."""
    def matching() -> List[Dict[str, Any]]:
        found = entries(gateway, agent_id)
        if which == "cached":
            return [e for e in found if e["kind"] == "decision" and (e.get("details") or {}).get("cached") is True]
        return [e for e in found if e["kind"] == which]

    deadline = time.monotonic() + timeout
    while len(found := matching()) < count:
        assert time.monotonic() < deadline, f"{len(found)} of {count} {which} entries arrived"
        time.sleep(0.05)
    time.sleep(0.3)
    return matching()


def test_every_denial_applied_from_the_cache_is_a_decision_entry_naming_the_one_reused(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    client = make_client(throw_on_denied=False)

    def ask() -> Any:
        return client.check("FilePlugin", "ReadFile", {"path": "/etc/passwd"})

    first = ask()
    assert (first.decision, first.source) == ("deny", "gateway")
    reused = [wait_for_live_cache(ask)] + [ask() for _ in range(3)]
    assert {(d.decision, d.source) for d in reused} == {("deny", "cache")}
    assert client.flush(10)
    cached = wait_for(gateway, agent_id, len(reused), "cached")
    assert len(cached) == len(reused)
    for entry in cached:
        assert (entry["action"], entry["decision"], entry["reason"]) == ("FilePlugin.ReadFile", "deny", "Access to system files blocked")
        assert entry["details"]["decisionId"] == first.decision_id


def test_a_cached_allow_through_guard_leaves_its_decision_entry_and_the_outcome(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    client = make_client()
    wait_for_live_cache(lambda: client.check("FilePlugin", "ReadFile", {"path": "/tmp/notes"}))
    before = len(wait_for(gateway, agent_id, 1, "cached"))
    assert client.guard("FilePlugin", "ReadFile", {"path": "/tmp/notes"}, lambda: "notes") == "notes"
    assert client.flush(10)
    assert len(wait_for(gateway, agent_id, before + 1, "cached")) == before + 1
    [outcome] = wait_for(gateway, agent_id, 1)
    assert (outcome["decision"], outcome["details"]["resultSummary"]) == ("allow", "returned string of 5 characters")


def test_queued_events_go_in_batch_bodies_audit_batch_size_at_a_time(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    proxy = CountingProxy(int(gateway.url.rsplit(":", 1)[1]))
    try:
        client = make_client(gateway_url=proxy.url, audit_batch_size=50, audit_flush_interval_seconds=3600, cache_enabled=False)
        for index in range(120):
            client.audit("BatchPlugin", "Run", decision="allow", duration_ms=1, result_summary=f"event {index}")
        assert client.flush(10)
        outcomes = wait_for(gateway, agent_id, 120)
        assert len({entry["details"]["resultSummary"] for entry in outcomes}) == 120
        # 50 + 50 + 20: one request per batch, where each event took one of its own.
        assert proxy.audit_requests == 3
    finally:
        proxy.close()


def test_an_event_delivered_late_is_stamped_with_when_the_call_happened(make_client: MakeClient, gateway: Gateway, agent_id: str) -> None:
    proxy = CountingProxy(int(gateway.url.rsplit(":", 1)[1]))
    try:
        proxy.held = True
        client = make_client(gateway_url=proxy.url, cache_enabled=False)
        before = time.time()
        client.audit("LatePlugin", "Run", decision="allow", duration_ms=1)
        after = time.time()
        assert not client.flush(1.5)
        proxy.held = False
        assert client.flush(10)
        [outcome] = wait_for(gateway, agent_id, 1)
        stamped = datetime.fromisoformat(outcome["timestamp"].replace("Z", "+00:00")).timestamp()
        assert before - 0.002 <= stamped <= after + 0.002
    finally:
        proxy.close()


def run_app(gateway: Gateway, api_key: str, agent_id: str, wal_dir: str, events: int, name: str) -> "subprocess.Popen[bytes]":
    return subprocess.Popen([sys.executable, APP, gateway.url, api_key, agent_id, wal_dir, str(events), name], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_two_processes_of_one_application_run_at_once_and_both_deliver(gateway: Gateway, api_key: str, agent_id: str, wal_dir: str) -> None:
    apps = [run_app(gateway, api_key, agent_id, wal_dir, 30, name) for name in ("first", "second")]
    results = [app.communicate(timeout=60) for app in apps]
    assert [(app.returncode, out, err) for app, (out, err) in zip(apps, results)] == [(0, b"done 0\n", b"")] * 2
    assert len(wait_for(gateway, agent_id, 60)) == 60
    assert os.listdir(wal_dir) == []  # closed with nothing left, each removed its file


def test_several_clients_of_one_agent_in_one_process_each_get_a_file(make_client: MakeClient, gateway: Gateway, agent_id: str, wal_dir: str) -> None:
    one, two = (make_client(audit_wal_path=None, audit_wal_dir=wal_dir, cache_enabled=False) for _ in range(2))
    one.audit("KeyedPlugin", "One", decision="allow", duration_ms=1)
    two.audit("KeyedPlugin", "Two", decision="allow", duration_ms=1)
    assert one.flush(10) and two.flush(10)
    assert sorted(entry["action"] for entry in wait_for(gateway, agent_id, 2)) == ["KeyedPlugin.One", "KeyedPlugin.Two"]


def test_the_next_process_to_start_sends_what_a_killed_one_left_each_event_once(gateway: Gateway, api_key: str, agent_id: str, wal_dir: str) -> None:
    killed = subprocess.Popen([sys.executable, APP, gateway.url, api_key, agent_id, wal_dir, "25", "killed", "hang"], stdout=subprocess.PIPE)
    try:
        assert killed.stdout is not None and killed.stdout.readline() == b"written\n"
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        killed.stdout.close()  # type: ignore[union-attr]
    assert len([name for name in os.listdir(wal_dir) if name.endswith(".wal")]) == 1
    # Two processes start at once: one of them takes the file over, and nothing is sent twice.
    apps = [run_app(gateway, api_key, agent_id, wal_dir, 1, name) for name in ("next-a", "next-b")]
    assert [app.wait(60) for app in apps] == [0, 0]
    for app in apps:
        app.communicate()
    outcomes = wait_for(gateway, agent_id, 27)
    assert len(outcomes) == 27
    assert len([entry for entry in outcomes if entry["details"]["resultSummary"].startswith("killed ")]) == 25
    assert os.listdir(wal_dir) == []

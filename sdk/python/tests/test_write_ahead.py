"""The audit write-ahead file: events recorded by a process killed before it sent them reach the
gateway after a restart, each exactly once, even when they are sent again."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from agentgov_sdk import Client, ClientOptions
from gateway_process import Gateway

CHILD = os.path.join(os.path.dirname(__file__), "audit_writer_child.py")
EVENTS = 25


def client_on(gateway: Gateway, api_key: str, agent_id: str, wal_path: str) -> Client:
    return Client(ClientOptions(gateway_url=gateway.url, grpc_address=gateway.grpc_address, api_key=api_key,
                                agent_id=agent_id, audit_wal_path=wal_path, audit_flush_interval_seconds=0.05))


def test_events_of_a_killed_process_are_sent_after_a_restart_each_once(gateway: Gateway, api_key: str, agent_id: str, wal_dir: str) -> None:
    wal_path = os.path.join(wal_dir, "audit.wal")
    child = subprocess.Popen([sys.executable, CHILD, gateway.url, api_key, agent_id, wal_path, str(EVENTS)], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"written\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()  # type: ignore[union-attr]
    assert child.returncode == -signal.SIGKILL
    with open(wal_path, "rb") as wal:
        assert len(wal.read().splitlines()) == EVENTS
    assert gateway.outcomes(agent_id) == []
    written = os.path.join(wal_dir, "audit.wal.as-written")
    shutil.copyfile(wal_path, written)

    with client_on(gateway, api_key, agent_id, wal_path) as restarted:
        assert restarted.flush(10)
    outcomes = gateway.wait_for_outcomes(agent_id, EVENTS)
    assert sorted(entry["details"]["resultSummary"] for entry in outcomes) == sorted(f"event {i}" for i in range(EVENTS))
    assert os.path.getsize(wal_path) == 0

    # The acknowledgements lost too (a crash after sending): everything goes again, and the
    # gateway's eventId idempotency keeps one entry per event.
    shutil.copyfile(written, wal_path)
    with client_on(gateway, api_key, agent_id, wal_path) as again:
        assert again.flush(10)
    outcomes = gateway.wait_for_outcomes(agent_id, EVENTS)
    assert len(outcomes) == EVENTS
    assert max(Counter(entry["details"]["eventId"] for entry in outcomes).values()) == 1


def test_a_torn_last_line_is_ignored_and_the_rest_is_sent(gateway: Gateway, api_key: str, agent_id: str, wal_dir: str) -> None:
    wal_path = os.path.join(wal_dir, "torn.wal")
    event = ('{"event":{"eventId":"torn-%s-1","agentId":"%s","plugin":"P","function":"f","arguments":{},'
             '"decision":"allow","durationMs":1}}\n' % (agent_id, agent_id))
    with open(wal_path, "w") as wal:
        wal.write(event + '{"event":{"eventId":"torn-2","agen')
    with client_on(gateway, api_key, agent_id, wal_path) as restarted:
        assert restarted.flush(10)
    [outcome] = gateway.wait_for_outcomes(agent_id, 1)
    assert outcome["details"]["eventId"] == f"torn-{agent_id}-1"


def test_a_second_client_on_the_same_file_is_refused(gateway: Gateway, api_key: str, agent_id: str, wal_dir: str) -> None:
    wal_path = os.path.join(wal_dir, "shared.wal")
    with client_on(gateway, api_key, agent_id, wal_path):
        with pytest.raises(RuntimeError, match="in use by another process"):
            client_on(gateway, api_key, agent_id, wal_path)


def test_a_full_batch_goes_out_without_waiting_for_the_interval(gateway: Gateway, api_key: str, agent_id: str, wal_dir: str) -> None:
    options = ClientOptions(gateway_url=gateway.url, grpc_address=gateway.grpc_address, api_key=api_key, agent_id=agent_id,
                            audit_wal_path=os.path.join(wal_dir, "batch.wal"), audit_batch_size=5, audit_flush_interval_seconds=3600)
    with Client(options) as client:
        for index in range(4):
            client.audit("FilePlugin", "ReadFile", decision="allow", duration_ms=1, result_summary=f"batched {index}")
        time.sleep(0.5)
        assert gateway.outcomes(agent_id) == []
        client.audit("FilePlugin", "ReadFile", decision="allow", duration_ms=1, result_summary="batched 4")
        assert len(gateway.wait_for_outcomes(agent_id, 5)) == 5

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from typing import Any, Callable, Iterator

import pytest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
sys.path.insert(0, os.path.dirname(__file__))

from agentgov_sdk import Client, ClientOptions  # noqa: E402
from gateway_process import Gateway, start_gateway  # noqa: E402


@pytest.fixture(scope="session")
def gateway() -> Iterator[Gateway]:
    started = start_gateway()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def api_key(gateway: Gateway) -> str:
    return gateway.create_api_key()


@pytest.fixture
def agent_id(gateway: Gateway) -> str:
    return gateway.create_agent(f"sdk-py-{uuid.uuid4().hex[:8]}", "verified", ["finance"])


@pytest.fixture
def wal_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="agentgov-wal-") as directory:
        yield directory


MakeClient = Callable[..., Client]


@pytest.fixture
def make_client(gateway: Gateway, api_key: str, agent_id: str, wal_dir: str) -> Iterator[MakeClient]:
    """Clients on the test gateway (options overridable), closed after the test."""
    clients: list[Client] = []

    def make(**overrides: Any) -> Client:
        options: dict[str, Any] = {
            "gateway_url": gateway.url, "grpc_address": gateway.grpc_address, "api_key": api_key, "agent_id": agent_id,
            "audit_wal_path": os.path.join(wal_dir, f"audit-{len(clients)}.wal"), "audit_flush_interval_seconds": 0.05,
        }
        options.update(overrides)
        client = Client(ClientOptions(**options))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()

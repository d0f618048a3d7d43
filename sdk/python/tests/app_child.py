"""One process of an agent application, as a user writes it: a client with the default audit
write-ahead file (audit_wal_dir, no audit_wal_path) and EVENTS audit events, then close(); prints
`done <pending>`. With `hang` it prints `written` once the events are recorded and waits to be
killed instead. Arguments: gateway_url api_key agent_id wal_dir events name [hang]."""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from agentgov_sdk import Client, ClientOptions  # noqa: E402


def main() -> None:
    gateway_url, api_key, agent_id, wal_dir, events, name = sys.argv[1:7]
    hang = sys.argv[7:] == ["hang"]
    client = Client(ClientOptions(
        gateway_url=gateway_url, api_key=api_key, agent_id=agent_id, audit_wal_dir=wal_dir, cache_enabled=False,
        audit_batch_size=500, audit_flush_interval_seconds=3600 if hang else 0.05,
    ))
    for index in range(int(events)):
        client.audit("AppPlugin", "Work", decision="allow", duration_ms=index, result_summary=f"{name} {index}")
    if hang:
        print("written", flush=True)
        time.sleep(3600)
    client.close()
    print(f"done {client._audit.pending()}", flush=True)


if __name__ == "__main__":
    main()

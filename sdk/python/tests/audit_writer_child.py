"""A process that records audit events and is then killed before it can send them: started by
test_write_ahead.py, which SIGKILLs it once it printed `written`."""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from agentgov_sdk import Client, ClientOptions  # noqa: E402


def main() -> None:
    gateway_url, api_key, agent_id, wal_path, count = sys.argv[1:6]
    client = Client(ClientOptions(
        gateway_url=gateway_url, api_key=api_key, agent_id=agent_id, audit_wal_path=wal_path,
        audit_batch_size=500, audit_flush_interval_seconds=3600, cache_enabled=False,
    ))
    for index in range(int(count)):
        client.audit("FilePlugin", "ReadFile", decision="allow", duration_ms=index, args={"path": f"/tmp/{index}"}, result_summary=f"event {index}")
    print("written", flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    main()

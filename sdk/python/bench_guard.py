"""The Python SDK's bench: a cached check() against an uncached one over gRPC, and guard()'s
overhead over calling the function bare (guardOverheadP50Ms: target at most 0.2 ms, as for the
.NET SDK; bench/sdk.bench.ts judges it). Prints one JSON object (times in milliseconds).

    /usr/bin/python3 sdk/python/bench_guard.py [--iterations N]
        [--gateway-url URL --grpc-address HOST:PORT --api-key KEY --agent-id ID]

Without the connection options it starts its own gateway (`npm run build` first) and stops it
after; with them it uses the caller's (the agent must exist, and FilePlugin.ReadFile of
/tmp/bench.txt must be allowed and cacheable there, as with sdk/fixtures/policies.yaml).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "tests"))

from agentgov_sdk import Client, ClientOptions, Decision  # noqa: E402

ARGS = {"path": "/tmp/bench.txt"}


def timings(run: Callable[[], Any], iterations: int) -> List[float]:
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def summary(samples: List[float]) -> Dict[str, float]:
    ordered = sorted(samples)
    return {
        "mean": round(statistics.fmean(ordered), 4),
        "p50": round(ordered[len(ordered) // 2], 4),
        "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 4),
    }


def bare_tool(path: str) -> str:
    return path.upper()


def measure(gateway_url: str, grpc_address: str, api_key: str, agent_id: str, iterations: int, wal_dir: str) -> Dict[str, Any]:
    def options(name: str, cache: bool) -> ClientOptions:
        return ClientOptions(gateway_url=gateway_url, grpc_address=grpc_address, api_key=api_key, agent_id=agent_id,
                             cache_enabled=cache, audit_wal_path=os.path.join(wal_dir, f"{name}.wal"))

    with Client(options("cached", True)) as cached, Client(options("uncached", False)) as uncached:

        def check_cached() -> Decision:
            return cached.check("FilePlugin", "ReadFile", ARGS)

        def check_uncached() -> Decision:
            return uncached.check("FilePlugin", "ReadFile", ARGS)

        deadline = time.monotonic() + 10
        while check_cached().source != "cache":  # the change stream is open: answers are cached
            if time.monotonic() > deadline:
                raise RuntimeError("check() answers never came from the cache")
            time.sleep(0.02)
        assert check_uncached().transport == "grpc", "the uncached check did not go over gRPC"
        timings(check_uncached, 50)
        uncached_ms = timings(check_uncached, iterations)
        cpu_started = time.process_time()
        cached_ms = timings(check_cached, iterations * 10)
        # The whole process's CPU, the sending of the audit events these checks queued included:
        # what a cached check costs the host, which the machine's load does not inflate.
        cached.flush(30)
        cached_cpu_us = (time.process_time() - cpu_started) / (iterations * 10) * 1e6
        bare_ms = timings(lambda: bare_tool(**ARGS), iterations * 10)
        guard_ms = timings(lambda: cached.guard("FilePlugin", "ReadFile", ARGS, lambda: bare_tool(**ARGS)), iterations)
        cached.flush(10)
    return {
        "sdk": "python",
        "transport": "grpc",
        "iterations": {"uncached": iterations, "cached": iterations * 10, "guard": iterations},
        "checkUncachedMs": summary(uncached_ms),
        "checkCachedMs": summary(cached_ms),
        "cachedSpeedup": round(statistics.fmean(uncached_ms) / statistics.fmean(cached_ms), 1),
        "cachedSpeedupP50": round(statistics.median(uncached_ms) / statistics.median(cached_ms), 1),
        "checkCachedCpuUs": round(cached_cpu_us, 1),
        "bareCallMs": summary(bare_ms),
        "guardMs": summary(guard_ms),
        "guardOverheadMs": round(statistics.fmean(guard_ms) - statistics.fmean(bare_ms), 4),
        "guardOverheadP50Ms": round(statistics.median(guard_ms) - statistics.median(bare_ms), 4),
        "note": "guard() = cached check and its audit event + the call + its outcome event, written to the write-ahead file (fsynced once per audit window)",
    }


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=500)
    for name in ("gateway-url", "grpc-address", "api-key", "agent-id"):
        parser.add_argument(f"--{name}")
    args = parser.parse_args(argv)
    given = [args.gateway_url, args.grpc_address, args.api_key, args.agent_id]
    if any(given) and not all(given):
        parser.error("give all of --gateway-url, --grpc-address, --api-key and --agent-id, or none")
    with tempfile.TemporaryDirectory(prefix="agentgov-bench-") as wal_dir:
        if all(given):
            result = measure(args.gateway_url, args.grpc_address, args.api_key, args.agent_id, args.iterations, wal_dir)
        else:
            from gateway_process import start_gateway

            gateway = start_gateway()
            try:
                agent_id = gateway.create_agent("bench-python", "verified", [])
                result = measure(gateway.url, gateway.grpc_address, gateway.create_api_key("bench-python"), agent_id, args.iterations, wal_dir)
            finally:
                gateway.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main()

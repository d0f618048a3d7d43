"""A real gateway for the tests and the bench: `node dist/src/main.js` from the repository root,
as `npm start` runs it (build it first with `npm run build`)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
GATEWAY_MAIN = os.path.join(REPO_ROOT, "dist", "src", "main.js")
FIXTURES = os.path.join(REPO_ROOT, "sdk", "fixtures")
ADMIN_TOKEN = "sdk-python-test-admin-token-0123456789"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http_json(method: str, url: str, body: Any = None, headers: Optional[Dict[str, str]] = None, raw: Optional[str] = None) -> Tuple[int, Any]:
    """One HTTP exchange; the status and the parsed JSON answer (None when empty)."""
    data = raw.encode() if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            payload = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        payload = error.read()
        status = error.code
    return status, (json.loads(payload) if payload else None)


@dataclass
class Gateway:
    url: str
    grpc_port: int
    process: "subprocess.Popen[bytes]"
    data_dir: str
    scratch_database: Optional[str] = None
    env: Optional[Dict[str, str]] = None

    @property
    def grpc_address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def admin(self, method: str, path: str, body: Any = None, raw: Optional[str] = None, content_type: str = "application/json") -> Tuple[int, Any]:
        return http_json(method, self.url + path, body, {"x-admin-token": ADMIN_TOKEN, "content-type": content_type}, raw)

    def create_agent(self, name: str, trust_tier: str = "verified", tags: Optional[List[str]] = None) -> str:
        status, body = self.admin("POST", "/admin/agents", {"name": name, "trustTier": trust_tier, "tags": tags or []})
        assert status == 201, body
        return str(body["id"])

    def create_api_key(self, name: str = "sdk-python") -> str:
        status, body = self.admin("POST", "/admin/api-keys", {"name": name})
        assert status == 201, body
        return str(body["key"])

    def put_policy(self, name: str, yaml: str) -> None:
        status, body = self.admin("PUT", f"/admin/policies/{name}", raw=yaml, content_type="application/yaml")
        assert status in (200, 201), body

    def outcomes(self, agent_id: str) -> List[Dict[str, Any]]:
        """The audit entries /v1/audit recorded for the agent (kind `outcome`, source `check`)."""
        status, body = self.admin("GET", f"/admin/audit?limit=1000&source=check&agentId={agent_id}")
        assert status == 200, body
        return [entry for entry in body["entries"] if entry["kind"] == "outcome"]

    def wait_for_outcomes(self, agent_id: str, count: int, timeout: float = 10.0) -> List[Dict[str, Any]]:
        """The agent's outcomes once at least `count` arrived, then a moment more (to see any extra)."""
        deadline = time.monotonic() + timeout
        while len(found := self.outcomes(agent_id)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(found)} of {count} audit outcomes arrived")
            time.sleep(0.05)
        time.sleep(0.3)
        return self.outcomes(agent_id)

    def halt(self) -> None:
        """Stops the process (SIGTERM, then SIGKILL after 10 s); its data stays for start_again()."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def start_again(self) -> None:
        """Starts the gateway again on its ports and data, as a gateway restarts."""
        assert self.env is not None
        self.process = _launch(self.env, self.data_dir)
        self._wait_for_health()

    def _wait_for_health(self) -> None:
        # A machine this loaded (2 cores, other suites beside) can take minutes to start it.
        deadline = time.monotonic() + 180
        while True:
            if self.process.poll() is not None:
                with open(os.path.join(self.data_dir, "gateway.log"), "rb") as output:
                    raise RuntimeError(f"the gateway exited with {self.process.returncode}: {output.read().decode()[-2000:]}")
            try:
                if http_json("GET", self.url + "/health")[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the gateway did not answer /health within 180 s")
            time.sleep(0.1)

    def stop(self) -> None:
        self.halt()
        if self.scratch_database is not None:
            drop_database(self.scratch_database)
        shutil.rmtree(self.data_dir, ignore_errors=True)


def start_gateway(policies_file: str = os.path.join(FIXTURES, "policies.yaml"), extra_env: Optional[Dict[str, str]] = None) -> Gateway:
    """Starts the gateway on free ports: PostgreSQL at DATABASE_URL when set, else embedded PGlite
    in a temporary DATA_DIR; waits for GET /health to answer 200."""
    if not os.path.exists(GATEWAY_MAIN):
        raise RuntimeError(f"{GATEWAY_MAIN} is missing: run `npm run build` at the repository root first")
    port, grpc_port = free_port(), free_port()
    data_dir = tempfile.mkdtemp(prefix="agentgov-sdk-python-")
    env = {
        "PATH": os.environ.get("PATH", ""), "PORT": str(port), "HOST": "127.0.0.1", "PDP_GRPC_PORT": str(grpc_port),
        "ADMIN_TOKEN": ADMIN_TOKEN, "POLICIES_FILE": policies_file, "DATA_DIR": data_dir,
        "AUDIT_FLUSH_MS": "10", "LOG_LEVEL": "error", **(extra_env or {}),
    }
    scratch = create_database(os.environ["DATABASE_URL"]) if os.environ.get("DATABASE_URL") else None
    if scratch is not None:
        env["DATABASE_URL"] = scratch
    gateway = Gateway(f"http://127.0.0.1:{port}", grpc_port, _launch(env, data_dir), data_dir, scratch, env)
    gateway._wait_for_health()
    return gateway


def _launch(env: Dict[str, str], data_dir: str) -> "subprocess.Popen[bytes]":
    with open(os.path.join(data_dir, "gateway.log"), "ab") as log:
        return subprocess.Popen(["node", GATEWAY_MAIN], cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def create_database(server_url: str) -> str:
    """A throwaway database on DATABASE_URL's server, so these suites never share org_default with
    another suite running on the same database; returns its URL."""
    name = f"agentgov_sdkpy_{os.getpid()}_{int(time.time() * 1000)}"
    subprocess.run(["psql", server_url, "-q", "-c", f"CREATE DATABASE {name}"], check=True, capture_output=True)
    base, _, _ = server_url.rpartition("/")
    return f"{base}/{name}"


def drop_database(url: str) -> None:
    base, _, name = url.rpartition("/")
    subprocess.run(["psql", f"{base}/postgres", "-q", "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], check=False, capture_output=True)

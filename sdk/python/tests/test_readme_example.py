"""The README's example (sdk/python/README.md, "Guarding a tool call"), taken from the README
as it stands, run against a gateway with the demo policies (config/policies.yaml): an example
that no longer runs, or says what the gateway does not do, fails here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from typing import Iterator

import pytest

from gateway_process import REPO_ROOT, Gateway, start_gateway

PACKAGE_ROOT = os.path.join(REPO_ROOT, "sdk", "python")
NOTES = "Buy milk; call Ada about the Q3 report.\n"


def readme_example() -> str:
    with open(os.path.join(PACKAGE_ROOT, "README.md"), encoding="utf-8") as readme:
        text = readme.read()
    section = next((part for part in text.split("\n## ") if part.startswith("Guarding a tool call")), "")
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None, 'README.md has no ```python block under "## Guarding a tool call"'
    return block.group(1)


def substituted(code: str, pattern: str, replacement: str) -> str:
    """`code` with `pattern` replaced; fails when the README no longer has what the test substitutes."""
    assert re.search(pattern, code), f"the README example no longer matches {pattern!r}: update this test with it"
    return re.sub(pattern, lambda _: replacement, code)


@pytest.fixture(scope="module")
def demo_gateway() -> Iterator[Gateway]:
    started = start_gateway(os.path.join(REPO_ROOT, "config", "policies.yaml"))
    try:
        yield started
    finally:
        started.stop()


def test_the_readme_example_runs_against_the_demo_policies_and_prints_what_it_says(demo_gateway: Gateway) -> None:
    agent_id = demo_gateway.create_agent("readme-example-py", "verified")
    code = readme_example()
    code = substituted(code, r'gateway_url="[^"]*",', f'gateway_url="{demo_gateway.url}", grpc_address="{demo_gateway.grpc_address}",')
    code = substituted(code, r'agent_id="agent_[^"]*"', f'agent_id="{agent_id}"')
    with tempfile.TemporaryDirectory(prefix="agentgov-readme-") as work:
        with open(os.path.join(work, "notes.txt"), "w", encoding="utf-8") as notes:
            notes.write(NOTES)
        with open(os.path.join(work, "example.py"), "w", encoding="utf-8") as example:
            example.write(code)
        env = {
            "PATH": os.environ.get("PATH", ""), "PYTHONPATH": PACKAGE_ROOT, "XDG_STATE_HOME": work,
            "AGENTGOV_API_KEY": demo_gateway.create_api_key("readme-example"),
        }
        ran = subprocess.run([sys.executable, "example.py"], cwd=work, env=env, capture_output=True, text=True, timeout=60)

    assert (ran.returncode, ran.stderr) == (0, "")
    assert ran.stdout.split("\n") == [
        NOTES.rstrip("\n"), "",
        "not allowed: Access to system files blocked (file-plugin-reads)",
        "skipped: Mail to personal or unknown domains is blocked",
        "",
    ]
    outcomes = demo_gateway.wait_for_outcomes(agent_id, 2)
    assert sorted((entry["action"], entry["details"]["resultSummary"]) for entry in outcomes) == [
        ("CrmPlugin.GetCustomer", "returned object of 2 keys"),
        ("FilePlugin.ReadFile", f"returned string of {len(NOTES)} characters"),
    ]

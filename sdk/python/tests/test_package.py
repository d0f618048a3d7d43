"""The package itself: options validation, and stubs that match proto/pdp.proto."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Dict

import pytest

from agentgov_sdk import ClientOptions, PluginOptions

PACKAGE_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def test_the_committed_stubs_are_what_generate_sh_makes_of_the_proto() -> None:
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([os.path.join(PACKAGE_ROOT, "generate.sh"), out], check=True)
        for name in ("pdp_pb2.py", "pdp_pb2_grpc.py"):
            fresh = os.path.join(out, "agentgov_sdk", "_generated", name)
            committed = os.path.join(PACKAGE_ROOT, "agentgov_sdk", "_generated", name)
            assert filecmp.cmp(fresh, committed, shallow=False), f"{name} is stale: run sdk/python/generate.sh"


# An application of the installed package, as a team writes one; mypy --strict must accept it.
CONSUMER = """\
import agentgov_sdk
from agentgov_sdk import Client, ClientOptions, Decision, PluginOptions, SoftDenial


def options(url: str) -> ClientOptions:
    return ClientOptions(gateway_url=url, api_key="agk_x", agent_id="agent_1", plugins={"Mail": PluginOptions(throw_on_denied=False)})


def allowed(decision: Decision) -> bool:
    return decision.allowed and not isinstance(decision, SoftDenial)


print(agentgov_sdk.__file__, options("http://gateway:3000").audit_durability, Client.__name__)
"""

# A wrong use, which the package's types (py.typed) must let mypy see.
MISUSE = """\
from agentgov_sdk import ClientOptions

ClientOptions(gateway_url=3000, api_key="agk_x", agent_id="agent_1")
"""


def test_the_built_wheel_installs_in_a_fresh_virtual_environment_with_its_types(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(PACKAGE_ROOT, source, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info", ".*_cache"))
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", str(wheels), str(source)],
                   check=True, capture_output=True)
    [wheel] = list(wheels.glob("agentgov_sdk-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {"agentgov_sdk/py.typed", "agentgov_sdk/_generated/pdp_pb2.pyi", "agentgov_sdk/client.py"} <= set(names)
    assert not [name for name in names if name.startswith(("tests/", "bench_guard"))]
    # Proprietary (LICENSE: no license granted), said so in the metadata and carried in the wheel.
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read("agentgov_sdk-0.1.0.dist-info/METADATA").decode()
        assert archive.read("agentgov_sdk-0.1.0.dist-info/LICENSE") == (Path(PACKAGE_ROOT) / "LICENSE").read_bytes()
    assert "License: Proprietary, see LICENSE" in metadata.splitlines()
    assert "Classifier: License :: Other/Proprietary License" in metadata.splitlines()

    # grpcio and protobuf come from the system's packages: this machine reaches no package index.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, capture_output=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-index", str(wheel)], check=True, capture_output=True)
    app = tmp_path / "app"
    app.mkdir()
    (app / "agent.py").write_text(CONSUMER)
    (app / "misuse.py").write_text(MISUSE)

    ran = subprocess.run([python, "agent.py"], cwd=app, capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")})
    assert (ran.returncode, ran.stderr) == (0, "")
    installed_at, durability, name = ran.stdout.split()
    assert installed_at.startswith(str(venv)) and (durability, name) == ("batch", "Client")

    mypy = [python, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull]
    typed = subprocess.run([*mypy, "agent.py"], cwd=app, capture_output=True, text=True)
    assert (typed.returncode, typed.stdout.strip()) == (0, "Success: no issues found in 1 source file")
    misused = subprocess.run([*mypy, "misuse.py"], cwd=app, capture_output=True, text=True)
    assert misused.returncode == 1
    assert 'Argument "gateway_url" to "ClientOptions" has incompatible type "int"; expected "str"' in misused.stdout


def test_options_defaults_follow_the_spec() -> None:
    options = ClientOptions(gateway_url="https://gov.example.com", api_key="agk_x", agent_id="agent_1")
    assert (options.default_trust_tier, options.throw_on_denied, options.timeout_seconds, options.failure_mode) == ("standard", True, 5.0, "fail-closed")
    assert options.resolved_grpc_address() == "gov.example.com:50051"


@pytest.mark.parametrize("missing", ["gateway_url", "api_key", "agent_id"])
def test_options_name_a_missing_required_field(missing: str) -> None:
    values: Dict[str, Any] = {"gateway_url": "http://localhost:8080", "api_key": "agk_x", "agent_id": "agent_1", missing: ""}
    with pytest.raises(ValueError, match=f"{missing} is required"):
        ClientOptions(**values)


def test_per_plugin_overrides_replace_only_what_they_set() -> None:
    options = ClientOptions(gateway_url="http://localhost:8080", api_key="k", agent_id="a", timeout_seconds=2,
                            plugins={"Files": PluginOptions(trust_tier="elevated")})
    files, other = options.for_plugin("Files"), options.for_plugin("Other")
    assert (files.trust_tier, files.timeout_seconds, files.throw_on_denied) == ("elevated", 2, True)
    assert other.trust_tier == "standard"


def test_options_refuse_an_unknown_failure_mode() -> None:
    with pytest.raises(ValueError, match="failure_mode"):
        ClientOptions(gateway_url="http://localhost:8080", api_key="k", agent_id="a", failure_mode="fail-sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "value"), [("audit_batch_size", 1.5), ("audit_batch_size", 0), ("cache_max_entries", -1), ("cache_max_entries", 2.5)])
def test_options_refuse_counts_that_are_not_whole(name: str, value: float) -> None:
    """audit_batch_size 1.5 killed the audit thread (events never sent); cache_max_entries -1 made
    check() raise KeyError('dictionary is empty')."""
    with pytest.raises(ValueError, match=name):
        ClientOptions(gateway_url="http://localhost:8080", api_key="k", agent_id="a", **{name: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("seconds", [-1, 3601, float("nan")])
def test_options_bound_approval_wait_seconds(seconds: float) -> None:
    assert ClientOptions(gateway_url="https://g", api_key="k", agent_id="a").approval_wait_seconds == 300
    assert ClientOptions(gateway_url="https://g", api_key="k", agent_id="a", approval_wait_seconds=0).approval_wait_seconds == 0
    with pytest.raises(ValueError, match="approval_wait_seconds must be between 0 and 3600"):
        ClientOptions(gateway_url="https://g", api_key="k", agent_id="a", approval_wait_seconds=seconds)


def test_the_source_distribution_holds_the_package_its_license_and_no_tests(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(PACKAGE_ROOT, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info", ".*_cache"))
    # setuptools' own PEP 517 hook, as `python -m build --sdist` calls it (build is not on this machine).
    subprocess.run([sys.executable, "-c", "import sys, setuptools.build_meta as backend; print(backend.build_sdist(sys.argv[1]))", str(tmp_path / "dist")],
                   cwd=source, check=True, capture_output=True)
    [sdist] = list((tmp_path / "dist").glob("agentgov[-_]sdk-0.1.0.tar.gz"))
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "README.md", "pyproject.toml", "agentgov_sdk/py.typed", "agentgov_sdk/decision_token.py", "agentgov_sdk/_generated/pdp_pb2.pyi"} <= names
    assert not [name for name in names if name.startswith(("tests/", "bench_guard"))]

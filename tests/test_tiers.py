"""The two tiers (tests/tiers.py): which tests are marked `model`, and that the fast tier fails a test
that loads llama.cpp unmarked, in the test process or in a child, caught or not. Each case runs pytest
on a few tests written here, in a folder of their own, with the tier plugin the suite uses."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.tiers import MODEL_FIXTURES

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
import pytest

pytest_plugins = ("tests.tiers",)


@pytest.fixture
def smollm2():
    from prefill.hub.bundled import bundled_model_path

    return bundled_model_path()
"""

# Loads llama.cpp in the test process (and catches what that raises, as a window's worker would), in a
# child process, through a helper of the module, and through a fixture of its own; and two that load nothing.
TESTS = '''
import subprocess
import sys

import pytest

CHILD = "from prefill.engine.llama.runtime import supports_gpu_offload; supports_gpu_offload()"


def start():
    from prefill.engine.llama.runtime import supports_gpu_offload

    supports_gpu_offload()


@pytest.fixture
def loaded():
    start()


def test_loads_and_swallows_the_error():
    try:
        start()
    except Exception:
        pass


def test_loads_in_a_child():
    subprocess.run([sys.executable, "-c", CHILD], env={"PATH": "/usr/bin"}, check=False)


def test_uses_the_model_fixture(smollm2):
    assert smollm2 is not None


def test_reads_a_command_line():
    assert ["--model", "bundled"]


def runtime():
    from prefill.engine.llama.runtime import LlamaRuntime

    return LlamaRuntime


def test_calls_a_helper_that_loads():
    assert runtime()


def test_uses_a_fixture_that_loads(loaded):
    pass


@pytest.mark.model
def test_marked(loaded):
    pass


def test_imports_the_engine_only():
    import prefill.engine.local.chat_engine  # noqa: F401


def test_pure():
    assert 1 + 1 == 2
'''


def pytest_run(folder: Path, *args: str, fast: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFILL_FAST_TIER")}
    env["PYTHONPATH"] = os.pathsep.join((str(ROOT), str(ROOT / "app")))
    if fast:
        env["PREFILL_FAST_TIER"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--rootdir", str(folder), *args, str(folder)], capture_output=True, text=True,
                          cwd=folder, env=env, timeout=300, check=False)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    model: loads llama.cpp\n")
    (tmp_path / "test_cases.py").write_text(textwrap.dedent(TESTS))
    return tmp_path


def test_the_model_tier_is_what_the_code_says_it_loads(suite: Path) -> None:
    out = pytest_run(suite, "--collect-only", "--tier-reasons", "-m", "model", fast=False)
    reasons = dict(line.split("::", 1)[1].split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
    assert reasons == {
        "test_uses_the_model_fixture": "uses the fixture smollm2",
        "test_reads_a_command_line": "test_reads_a_command_line runs a command with --model",
        "test_calls_a_helper_that_loads": "runtime calls LlamaRuntime",
        "test_marked": "marked model",
    }, out.stdout
    # What reading cannot see (a call inside the engine, a child's own code) the fast tier catches: below.


def test_the_fast_tier_fails_each_test_that_loads_llama_cpp_unmarked(suite: Path) -> None:
    # Run as a person would by hand: `-m "not model"` alone is the fast tier (make test-fast also says so
    # in $PREFILL_FAST_TIER).
    out = pytest_run(suite, "-m", "not model", "-rA", fast=False)
    lines = out.stdout.splitlines()
    failed = {ln.split("::")[1].split()[0] for ln in lines if ln.startswith(("FAILED", "ERROR"))}
    passed = {ln.split("::")[1].split()[0] for ln in lines if ln.startswith("PASSED")}
    assert failed == {"test_loads_and_swallows_the_error", "test_loads_in_a_child", "test_uses_a_fixture_that_loads"}, \
        out.stdout[-3000:]
    # The one that swallowed the refusal passed its call; its teardown is the error that says so.
    assert passed - failed == {"test_imports_the_engine_only", "test_pure"}, out.stdout[-3000:]
    assert "this test loads llama.cpp (llama_backend_init" in out.stdout and "mark it @pytest.mark.model" in out.stdout
    assert "in pid" in out.stdout and "-c from prefill.engine.llama.runtime" in out.stdout  # the child, named


SYS_MODULES_AFTER = """
import json, sys
import pytest

class After:
    def pytest_sessionfinish(self):
        self.modules = sorted(sys.modules)

after = After()
code = pytest.main(["-q", "-p", "no:cacheprovider", "-m", "not model", *sys.argv[1:]], plugins=[after])
print(json.dumps({"code": int(code), "modules": after.modules}))
"""


def test_the_harness_imports_no_llama_cpp() -> None:
    """The suite's conftest and plugins import no llama.cpp: a fast test that imports no engine runs
    without it (the model fixtures import it when a test asks for one)."""
    out = subprocess.run([sys.executable, "-c", SYS_MODULES_AFTER, "tests/store/test_schema.py"], capture_output=True,
                         text=True, cwd=ROOT, timeout=300, check=False, env={**os.environ, "PREFILL_FAST_TIER": "1"})
    found = json.loads(out.stdout.splitlines()[-1])
    assert found["code"] == 0, out.stdout[-2000:]
    assert {"tests.tiers", "tests.model_fixtures", "prefill.store"} <= set(found["modules"])  # they did load
    assert [m for m in found["modules"] if m.startswith("llama_cpp")] == []


def test_every_model_fixture_is_defined() -> None:
    """A fixture listed in MODEL_FIXTURES that no longer exists marks nothing: the list must follow renames."""
    defined = set()
    for path in [ROOT / "tests" / "model_fixtures.py", *(ROOT / "tests").rglob("conftest.py")]:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list):
                defined.add(node.name)
    assert MODEL_FIXTURES <= defined, MODEL_FIXTURES - defined

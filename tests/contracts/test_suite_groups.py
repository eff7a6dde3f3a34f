"""The suite's xdist groups hold: a small suite under the repository's conftest.py, run on
two workers, keeps each grouped marker's tests, and the tests of each grouped fixture, on
one worker and shows the group in their ids (`@vllm`, `@vllm-servers`, `@pfgen-tables`).
The conftest reaches past pytest's public API to name a group (`_name_group`: pytest 9.2
keeps node ids where xdist 3.8 does not write); when a pytest or xdist release moves them
again, this fails instead of the real-vLLM tests silently spreading over both workers.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

SUITE = """
import pytest


@pytest.mark.vllm
@pytest.mark.parametrize("k", range(4))
def test_engine(k):
    pass


@pytest.mark.vllm("servers")
@pytest.mark.parametrize("k", range(2))
def test_server(k):
    pass


@pytest.fixture(scope="session")
def shared_tables():
    return "built once"


@pytest.mark.parametrize("k", range(3))
def test_tables(k, shared_tables):
    pass


@pytest.mark.parametrize("k", range(4))
def test_free(k):
    pass
"""
INI = """[pytest]
markers =
    vllm: real engines
    exclusive: one at a time
"""


@pytest.mark.slow
def test_grouped_tests_share_a_worker_and_show_their_group(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    shutil.copy(REPO / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "test_grouped.py").write_text(SUITE)
    args = ["-n", "2", "-v", "-p", "no:cacheprovider", "--strict-markers"]
    # a controller of its own, not a worker of this run (the conftest reads this variable)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # the conftest imports the repository's tests.helpers (a fresh clone has no install of it)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ran = re.findall(r"\[(gw\d)\] .*?PASSED (\S+)", result.stdout)
    assert len(ran) == 13, result.stdout[-3000:]
    workers: dict[str, set[str]] = {}
    for worker, node in ran:
        test = node.split("::")[1].split("[")[0]
        suffix = {"test_engine": "@vllm", "test_server": "@vllm-servers",
                  "test_tables": "@pfgen-tables", "test_free": "]"}  # fmt: skip
        assert node.endswith(suffix[test]), node
        workers.setdefault(test, set()).add(worker)
    assert all(len(workers[t]) == 1 for t in ("test_engine", "test_server", "test_tables")), workers

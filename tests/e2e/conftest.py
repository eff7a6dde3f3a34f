"""The one-engine vLLM run the real-vLLM modules share (one engine start a session):
tests/e2e/test_vllm_inprocess.py compares it with the transformers backend,
tests/e2e/test_vllm_ray.py compares data-parallel and multi-node runs with it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers.vllm_venv import (
    ENGINE_OPTIONS,
    EngineRun,
    run_args,
    run_hakari,
    sample_tasks,
    vllm_python,
)


@pytest.fixture(scope="session")
def one_engine(smollm2_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> EngineRun:
    """`hakari run --model vllm:SmolLM2` (fp32, eager) on one engine in the vLLM venv:
    the demo tasks and a JGLUE sample, greedy, constrained and loglik."""
    vllm_python()
    out = tmp_path_factory.mktemp("vllm-one-engine")
    started = time.monotonic()
    done = run_hakari(
        ["run", "--model", f"vllm:{smollm2_folder}", *ENGINE_OPTIONS,
         *run_args(sample_tasks(), out / "vllm")],
        cache_dir=out / "cache",
        log=out / "vllm.log",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    seconds = time.monotonic() - started
    print(f"\nvLLM one-engine run: {seconds:.0f} s")
    return EngineRun(out / "vllm", out / "cache", out / "vllm.log", seconds)

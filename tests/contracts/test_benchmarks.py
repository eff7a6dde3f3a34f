"""The benchmarks stay a maintained part: every script has a quick `--smoke` mode that
runs here (marked `benchmark`; `benchmarks/smoke.py` runs the same scripts as a table) and
a row in benchmarks/README.md, and the shared timing helper keeps the fastest of
interleaved rounds."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.paths import REPO, script_module

BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("bench_*.py"))


def _timing() -> ModuleType:
    return script_module(BENCHMARKS / "timing.py", "bench_timing")


def _calls(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_every_benchmark_has_a_smoke_mode_and_an_index_row(script: Path) -> None:
    assert "add_smoke_flag" in _calls(script), f"{script.name}: no --smoke (timing.add_smoke_flag)"
    index = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    assert f"| `{script.name}` |" in index, f"{script.name} has no row in benchmarks/README.md"


def test_no_benchmark_copies_the_timing_loop() -> None:
    copies = [p.name for p in SCRIPTS if "def timed(" in p.read_text(encoding="utf-8")]
    assert copies == []


def test_best_of_rounds_keeps_each_variants_fastest_round() -> None:
    timing = _timing()
    clock = iter([0.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0, 9.0])  # a: 3 then 1, b: 1 then 4
    order: list[str] = []

    def run(name: str) -> object:
        return order.append(name)

    real = timing.time.perf_counter
    timing.time.perf_counter = lambda: next(clock)
    try:
        best = timing.best_of_rounds(
            {"a": lambda: run("a"), "b": lambda: run("b")}, 2, alternate=True
        )
    finally:
        timing.time.perf_counter = real
    assert order == ["a", "b", "b", "a"]  # every other round reversed
    assert best == {"a": 3.0, "b": 1.0}


def _smoke() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import smoke
    finally:
        sys.path.remove(str(BENCHMARKS))
    return smoke


# the vLLM benchmark starts a real engine when the vLLM venv is there: one at a time
NEEDS_VLLM = {"bench_vllm"}


@pytest.mark.slow
@pytest.mark.benchmark
@pytest.mark.parametrize(
    "script",
    [
        pytest.param(p, marks=[pytest.mark.vllm("servers")] if p.stem in NEEDS_VLLM else [])
        for p in SCRIPTS
    ],
    ids=lambda p: p.stem,
)
def test_the_benchmark_runs_end_to_end_in_its_smoke_mode(script: Path) -> None:
    """Each script in a fresh process, as `benchmarks/smoke.py` runs it: a script that needs
    what this machine lacks (a GPU, the vLLM venv, data under ../shared) skips with its
    reason; not a measurement (the numbers of a smoke run mean nothing)."""
    status, _, detail = _smoke().run(script)
    if status == "skipped":
        pytest.skip(f"{script.stem}: {detail}")
    assert status == "ok", f"{script.name}: {status}\n{detail}"


def test_smoke_reports_a_skip_apart_from_a_failure(tmp_path: Path) -> None:
    smoke = _smoke()
    skipping = tmp_path / "bench_skips.py"
    skipping.write_text("raise SystemExit(77)\n")
    failing = tmp_path / "bench_fails.py"
    failing.write_text("raise RuntimeError('broken import')\n")
    assert smoke.run(skipping)[0] == "skipped"
    status, _, detail = smoke.run(failing)
    assert status.startswith("FAILED") and "broken import" in detail

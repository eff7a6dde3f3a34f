"""The small-grid floor of budgeted runs (`aggregate.budget.floor`) and the JNLI `--limit 8`
case it exists for: 18 templates × 8 instances at `--budget 2x` gave intervals that missed
the full grid's mean and std, with no warning."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hakari.aggregate.budget.floor import MIN_CELLS_PER_TEMPLATE, MIN_INSTANCES, grid_verdict
from hakari.backends.fake import FakeBackend, hash_choice
from hakari.runner import evaluate
from tests.helpers.cli import assert_one_line, invoke
from tests.helpers.paths import SHARED

DATASETS = SHARED / "datasets"


def test_the_jnli_limit_8_grid_gets_no_estimate() -> None:
    verdict = grid_verdict(18, 8, 16)  # --limit 8 --budget 2x on JNLI's 18 templates
    assert verdict.action == "full"
    assert verdict.message is not None and "18 templates × 8 instances" in verdict.message
    assert "full grid (144 cells)" in verdict.message


def test_the_floor_refuses_a_large_grid_and_names_the_minimum() -> None:
    verdict = grid_verdict(18, 200, 40)
    assert verdict.action == "refuse"
    assert verdict.minimum_cells == MIN_CELLS_PER_TEMPLATE * 18
    assert f"{MIN_CELLS_PER_TEMPLATE * 18} cells" in str(verdict.message)
    assert grid_verdict(18, 200, 400).action == "estimate"
    assert grid_verdict(18, 200, 3600).action == "estimate"  # the full grid
    assert grid_verdict(18, MIN_INSTANCES, 18).action == "refuse"
    assert grid_verdict(18, MIN_INSTANCES - 1, 18).action == "full"  # no budget is honest
    too_few = grid_verdict(1000, MIN_INSTANCES - 1, 100)  # no budget is honest, not cheap
    assert too_few.action == "refuse" and f"at least {MIN_INSTANCES} instances" in str(
        too_few.message
    )


@pytest.mark.skipif(not (DATASETS / "jnli").exists(), reason="no JNLI data in ../shared")
def test_a_budgeted_jnli_limit_8_run_says_so_in_one_line_and_runs_the_full_grid(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        res = evaluate(
            models=["m"],
            tasks=["jnli"],
            decodings=["greedy"],
            data_dir=DATASETS,
            limit=8,
            budget="2x",
            n_boot=50,
            cache_dir=tmp_path / "cache",
            backend_factory=lambda spec: FakeBackend(
                lambda r: hash_choice(r.prompt, ["0", "1", "2"])
            ),
        )
    lines = [r.getMessage() for r in caplog.records if "too small" in r.getMessage()]
    assert len(lines) == 1 and "jnli" in lines[0] and "\n" not in lines[0]
    dec = res.models["m"].tasks["jnli"].decodings["greedy"]
    # the whole grid ran, so it is a full run: nothing estimated, no budget record, and
    # the config says why (issue 38 §11)
    assert dec.budget is None
    assert "jnli" in (res.config.run_in_full or {})
    assert len(dec.templates) == 18
    assert all(t.n == 8 and not t.estimated for t in dec.templates.values())


@pytest.mark.skipif(not (DATASETS / "jnli").exists(), reason="no JNLI data in ../shared")
def test_a_budget_below_the_floor_is_refused_before_any_model_loads(
    no_model_loads: list[str],
) -> None:
    code, out = invoke(
        "--tasks", "jnli", "--data-dir", str(DATASETS), "--limit", "200", "--budget", "40"
    )
    assert_one_line(code, out, f"{MIN_CELLS_PER_TEMPLATE * 18} cells")
    assert no_model_loads == []

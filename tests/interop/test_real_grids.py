"""The shared real grids (Qwen2.5 0.5B and 1.5B on two MMLU subjects, 40 templates × 100
items, made outside the project) imported as a long table give bench_budget's full-grid
truth (mean, std, Sharpe over the templates) to 1e-12; imported as grids they give the same
numbers, with the template bank's levels feeding the per-dimension attribution."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import ModuleType

import pytest

from hakari.interop.api import import_run
from hakari.interop.finish import Settings
from hakari.interop.options import ImportOptions
from tests.helpers.interop import statistics
from tests.helpers.paths import REPO, SHARED, script_module

REAL_GRIDS = SHARED / "real-grids"
pytestmark = pytest.mark.skipif(
    not REAL_GRIDS.is_dir(), reason="../shared/real-grids is not beside the checkout"
)
SETTINGS = Settings(alpha=1.0, n_boot=200, seed=0)


def _bench_budget() -> ModuleType:
    return script_module(REPO / "benchmarks" / "bench_budget.py", "bench_budget_for_interop")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _bench_budget()


def _long_table(bench: ModuleType, path: Path) -> list:
    """Every cell of the external grids as rows model, task, template, item, score,
    level.DIMENSION (the templates' levels from the bank)."""
    grids = bench.external_grids()
    assert len(grids) == 4
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = None
        for grid in grids:
            model, task, _ = grid.name.split(" ")
            scores = grid.item_scores["exact_match"]
            for t, template in enumerate(grid.template_ids):
                levels = {f"level.{d}": v for d, v in (grid.levels or {})[template].items()}
                for i in range(grid.shape[1]):
                    row = {
                        "model": model,
                        "task": task,
                        "template": template,
                        "item": i,
                        "score": float(scores[t, i]),
                        **levels,
                    }
                    if writer is None:
                        writer = csv.DictWriter(fh, fieldnames=list(row))
                        writer.writeheader()
                    writer.writerow(row)
    return grids


def test_long_table_equals_the_full_grid_truth_to_1e12(bench: ModuleType, tmp_path: Path) -> None:
    table = tmp_path / "grids.csv"
    grids = _long_table(bench, table)
    results_json, results = import_run("table", [table], tmp_path / "run", settings=SETTINGS)
    checked = 0
    for grid in grids:
        model, task, _ = grid.name.split(" ")
        truth_templates, truth = bench.truth_of(grid, 1.0)["exact_match"]
        dec = results.models[model].tasks[task].decodings["imported"]
        got = [dec.templates[t].metrics["score"] for t in grid.template_ids]
        assert max(abs(g - w) for g, w in zip(got, truth_templates, strict=True)) <= 1e-12
        stats = dec.aggregate["score"]
        for name in ("mean", "std", "sharpe"):
            assert abs(getattr(stats, name) - truth[name]) <= 1e-12, (grid.name, name)
            checked += 1
        assert dec.space is not None and set(dec.space["score"].dimensions) == set(
            next(iter(grid.levels.values()))
        )
    assert checked == 12
    imported = json.loads(results_json.read_text())["imported"]
    assert imported["source"] == "table" and imported["dropped"] == []


@pytest.mark.slow
def test_grid_source_gives_the_table_numbers(bench: ModuleType, tmp_path: Path) -> None:
    """`import grid` on the folder (the bank beside the grids) and `import table` on the
    same cells: the same statistics, metric key aside."""
    table = tmp_path / "grids.csv"
    _long_table(bench, table)
    from_table, _ = import_run(
        "table",
        [_renamed(table, tmp_path)],
        tmp_path / "t",
        ImportOptions(scores=("exact_match",)),
        SETTINGS,
    )
    from_grid, results = import_run("grid", [REAL_GRIDS], tmp_path / "g", settings=SETTINGS)
    assert statistics(from_grid) == statistics(from_table)
    assert "qwen-template-bank.json" in results.imported.files[-1].path


def _renamed(table: Path, tmp_path: Path) -> Path:
    """The table with the grids' metric and decoding names (exact_match, loglik)."""
    out = tmp_path / "renamed.csv"
    text = table.read_text(encoding="utf-8").splitlines()
    header = text[0].replace(",score,", ",exact_match,") + ",decoding"
    out.write_text("\n".join([header, *(line + ",loglik" for line in text[1:])]) + "\n")
    return out

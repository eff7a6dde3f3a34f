"""Incomplete and mismatched grids: missing cells counted per model × task and named, the
statistics on the items every template has (or, with --fill, every item estimated and
marked so), two models with different items compared on the items they share, and a
comparison with too few shared items refused in one note."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from hakari.errors import HakariInputError
from hakari.interop.api import import_run
from hakari.interop.finish import Settings
from hakari.interop.options import ImportOptions
from hakari.results import EvalResults
from tests.helpers.cli import succeed

SETTINGS = Settings(n_boot=200, seed=3)
TEMPLATES = ("t0", "t1", "t2", "t3")


def _rows(
    model: str, items: range, skill: float, skip: set[tuple[str, int]] = frozenset()
) -> list[dict]:
    rng = random.Random(model)
    return [
        {
            "model": model,
            "task": "qa",
            "template": t,
            "item": i,
            "score": float(rng.random() < skill),
        }
        for t in TEMPLATES
        for i in items
        if (t, i) not in skip
    ]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _import(tmp_path: Path, rows: list[dict], settings: Settings = SETTINGS) -> EvalResults:
    _, results = import_run(
        "table", [_write(tmp_path / "t.jsonl", rows)], tmp_path / "run", settings=settings
    )
    return results


def test_missing_cells_are_counted_and_their_items_dropped(tmp_path: Path) -> None:
    skip = {("t1", 3), ("t2", 3), ("t2", 7)}
    results = _import(tmp_path, _rows("a", range(30), 0.6, skip))
    dec = results.models["a"].tasks["qa"].decodings["imported"]
    assert {t.n for t in dec.templates.values()} == {28}
    assert results.models["a"].tasks["qa"].n_instances == 28
    (dropped,) = results.imported.dropped
    assert dropped.missing_cells == 3
    assert dropped.dropped_items == ["3", "7"]
    assert dropped.missing_by_template == {"t1": 1, "t2": 2}


def test_the_command_says_what_was_dropped(tmp_path: Path) -> None:
    table = _write(tmp_path / "t.jsonl", _rows("a", range(30), 0.6, {("t1", 3)}))
    out = succeed(
        ["import", "table", str(table), "--output", str(tmp_path / "r"), "--n-boot", "0"]
    ).output
    assert "a · qa · imported: 1 missing cell(s), 1 item(s) dropped" in out


def test_models_with_different_items_are_compared_on_the_shared_ones(tmp_path: Path) -> None:
    rows = _rows("a", range(40), 0.8) + _rows("b", range(10, 50), 0.4)
    results = _import(tmp_path, rows)
    assert results.models["a"].tasks["qa"].n_instances == 40
    (comparison,) = results.paired["qa"]["imported"]
    assert comparison.n_instances == 30  # items 10..39
    assert (comparison.model_a, comparison.model_b) == ("a", "b")
    # the pair is scored on the shared items: A's mean there, not over its 40
    shared = [r["score"] for r in rows if r["model"] == "a" and 10 <= r["item"] < 40]
    assert abs(comparison.mean.a - sum(shared) / len(shared)) < 1e-12


def test_a_comparison_on_too_few_shared_items_is_refused(tmp_path: Path) -> None:
    rows = _rows("a", range(20), 0.8) + _rows("b", range(15, 35), 0.4)
    results = _import(tmp_path, rows)
    assert results.paired is None
    (note,) = [n for n in results.imported.notes if "not compared" in n]
    assert note == "qa (imported): a and b are not compared: they share 5 items, fewer than 10"


def test_three_models_get_groups(tmp_path: Path) -> None:
    rows = _rows("a", range(40), 0.9) + _rows("b", range(40), 0.5) + _rows("c", range(40), 0.1)
    results = _import(tmp_path, rows)
    groups = results.model_groups["qa"]["imported"]["score"]
    assert set(groups.scores) == {"a", "b", "c"}
    assert len(results.paired["qa"]["imported"]) == 3


def test_fill_estimates_the_missing_cells_and_marks_every_number(tmp_path: Path) -> None:
    rng = random.Random(0)
    rows = [
        r for r in _rows("a", range(40), 0.8) + _rows("b", range(40), 0.4) if rng.random() > 0.25
    ]
    results = _import(tmp_path, rows, Settings(n_boot=100, seed=3, fill=True))
    for model in ("a", "b"):
        task = results.models[model].tasks["qa"]
        dec = task.decodings["imported"]
        assert task.n_instances == 40
        assert dec.aggregate["score"].estimated is True
        assert all(t.estimated for t in dec.templates.values())
        assert dec.budget is not None and dec.budget.stopped == "imported"
        assert dec.budget.design.cells_run == sum(1 for r in rows if r["model"] == model)
        # which estimator made the numbers, by the metric's results.json key (issue 38 §1)
        (chosen,) = dec.budget.estimator.metrics.items()
        assert chosen[0] == "score" and chosen[1].reason in ("fits", "instances uninformative")
        assert dec.budget.estimator.version == 5
    assert all(d.filled and d.dropped_items == [] for d in results.imported.dropped)
    (comparison,) = results.paired["qa"]["imported"]
    assert comparison.estimated is True and comparison.metric == "score"
    assert results.imported.options["fill"] is True


def test_fill_refuses_a_metric_that_is_no_mean_of_items(tmp_path: Path) -> None:
    rows = [
        {
            "model": "a",
            "task": "x",
            "template": t,
            "item": i,
            "answer": "p" if i % 3 else "n",
            "gold": "p" if i % 2 else "n",
        }
        for t in TEMPLATES
        for i in range(20)
        if (t, i) != ("t1", 4)
    ]
    with pytest.raises(HakariInputError, match="mcc is not a mean of per-item scores"):
        import_run(
            "table",
            [_write(tmp_path / "t.jsonl", rows)],
            tmp_path / "run",
            ImportOptions(metrics=("accuracy", "mcc")),
            Settings(n_boot=50, fill=True),
        )

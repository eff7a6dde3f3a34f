"""A JMMLU space run end to end with the `fake:` backend: `--templates space:100` with and
without `--budget 2x`; levels in results.json; the family's two pooled means."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hakari
from tests.helpers.paths import SHARED

DATA = SHARED / "datasets"
pytestmark = pytest.mark.skipif(not (DATA / "jmmlu").is_dir(), reason="../shared/datasets absent")
TASKS = ["jmmlu:marketing", "jmmlu:nutrition"]


def _run(tmp_path: Path, name: str, **kw: object) -> dict:
    hakari.evaluate(
        models=["fake:A"],
        tasks=TASKS,
        decodings=["greedy", "loglik"],
        templates="space:100",
        data_dir=DATA,
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / name,
        n_boot=50,
        **kw,  # type: ignore[arg-type]
    )
    return json.loads((tmp_path / name / "results.json").read_text())


@pytest.mark.slow
def test_space_budget_run(tmp_path: Path) -> None:
    # 32 instances, 4 cells a template: the smallest grid and budget estimated honestly
    # (`aggregate.budget.floor`; a smaller grid runs in full, not estimated)
    doc = _run(tmp_path, "budget", limit=32, budget="13x")
    for task in ("jmmlu-marketing", "jmmlu-nutrition"):
        dec = doc["models"]["fake:A"]["tasks"][task]["decodings"]["loglik"]
        assert len(dec["templates"]) == 100
        for tid, t in dec["templates"].items():
            assert t["estimated"] is True and tid == ".".join(t["levels"].values())
        assert dec["budget"]["design"]
    assert doc["config"]["templates"] == "space:100"
    assert set(doc["families"]["jmmlu"]["fake:A"]) == {"greedy", "loglik"}


def test_space_full_run_pools_the_family(tmp_path: Path) -> None:
    doc = _run(tmp_path, "full", limit=4)
    tasks = doc["models"]["fake:A"]["tasks"]
    fam = doc["families"]["jmmlu"]["fake:A"]["greedy"]["accuracy"]
    assert fam["members"] == ["jmmlu-marketing", "jmmlu-nutrition"] and fam["n_questions"] == 8
    runs = [tasks[t]["decodings"]["greedy"]["templates"] for t in fam["members"]]
    tid = next(iter(runs[0]))
    per = [r[tid]["metrics"]["accuracy"] for r in runs]
    assert fam["over_subjects"]["per_template"][tid] == pytest.approx(np.mean(per))
    assert fam["over_questions"]["per_template"][tid] == pytest.approx(np.mean(per))  # 4 + 4
    values = list(fam["over_questions"]["per_template"].values())
    assert fam["over_questions"]["std"] == pytest.approx(np.std(values))

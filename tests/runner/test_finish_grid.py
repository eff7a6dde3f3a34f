"""The finisher as an importer calls it (issue 37 §1, §4): a grid built by hand, without a
task file or prompts, finished by `finish_grid` gives the numbers a native run of the same
answers wrote; per-item scores given by a source give, through `given_score`, exactly a
native accuracy's numbers; missing cells go to the imputed estimator."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend, hash_choice
from hakari.errors import HakariInputError
from hakari.results import EvalResults
from hakari.runner import evaluate
from hakari.runner.estimators import (
    BudgetRun,
    Cells,
    Direct,
    FinishOptions,
    GridMetric,
    GridTask,
    Imputed,
    MissingCells,
    cannot_estimate,
    finish_grid,
    missing_cells,
)
from hakari.scoring import corpus
from hakari.tasks.loader import load_task
from tests.helpers.oracle import TASK

MODELS = ("a", "b", "c")
LABELS = ("positive", "negative")
OPTIONS = FinishOptions(alpha=1.0, n_boot=200, seed=0)


def _answers(name: str) -> Callable[[GenerationRequest], str]:
    return lambda r: hash_choice(r.prompt + name, ["1", "2", "A", "B", "positive", "negative"])


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> tuple[EvalResults, list[dict[str, Any]]]:
    """A native full run of three models on the demo task: its results and samples."""
    tmp = tmp_path_factory.mktemp("native")
    evaluate(
        models=list(MODELS),
        tasks=[TASK],
        decodings=["greedy"],
        n_boot=OPTIONS.n_boot,
        cache_dir=tmp / "cache",
        output_dir=tmp / "run",
        backend_factory=lambda spec: FakeBackend(_answers(spec), name=spec),
    )
    lines = (tmp / "run" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return EvalResults.read(tmp / "run" / "results.json"), [json.loads(x) for x in lines]


def _by_hand(samples: list[dict[str, Any]], metrics: tuple[GridMetric, ...]) -> GridTask:
    """The grid of the samples, as an importer builds it: no task file, no prompt."""
    template_ids = tuple(dict.fromkeys(s["template_id"] for s in samples))
    golds = {s["index"]: s["gold"] for s in samples}
    items = tuple(sorted(golds))
    return GridTask(
        name="demo",
        metrics=metrics,
        template_ids=template_ids,
        items=items,
        golds=tuple(golds[i] for i in items),
        answer_type="label",
        labels=LABELS,
    )


def _cells(samples: list[dict[str, Any]], *, given: bool = False) -> dict[str, Cells]:
    out: dict[str, Cells] = {}
    for s in samples:
        cells = out.setdefault(s["model"], Cells())
        cell = (s["template_id"], s["index"])
        cells.add(cell, s["answer"], s["fallback"])
        if given:  # lm-eval's per-sample acc: 1.0 when the answer is the gold
            cells.scores.setdefault("acc", {})[cell] = float(s["answer"] == s["gold"])
    return out


def test_a_grid_built_by_hand_finishes_as_a_native_run(native: tuple) -> None:
    results, samples = native
    grid = _by_hand(samples, (GridMetric("accuracy", "accuracy"), GridMetric("mcc", "mcc")))
    cells = _cells(samples)
    for model, c in cells.items():
        ran = results.models[model].tasks[TASK].decodings["greedy"]
        c.generated, c.cached = ran.generated, ran.cached
    finished = finish_grid(grid, cells, Direct(), OPTIONS)
    for model in MODELS:
        want = results.models[model].tasks[TASK].decodings["greedy"].to_dict()
        got = finished.decodings[model].to_dict()
        assert {**got, "wall_s": None} == {**want, "wall_s": None}, model
    assert results.paired is not None and results.model_groups is not None
    assert [p.to_dict() for p in finished.paired] == [
        p.to_dict() for p in results.paired[TASK]["greedy"]
    ]
    groups = results.model_groups[TASK]["greedy"]
    assert {k: g.to_dict() for k, g in finished.model_groups.items()} == {
        k: g.to_dict() for k, g in groups.items()
    }


def test_given_per_item_scores_are_a_native_accuracy_to_the_last_bit(native: tuple) -> None:
    """lm-eval's `acc` of each sample, imported: the same numbers as hakari's accuracy of
    the same answers (same per-item scorer, same bootstrap), under the source's name."""
    results, samples = native
    grid = _by_hand(samples, (GridMetric("acc", "given_score"),))
    grid = GridTask(**{**vars(grid), "golds": (None,) * len(grid.items)})  # not read
    finished = finish_grid(grid, _cells(samples, given=True), Direct(), OPTIONS)
    for model in MODELS:
        want = results.models[model].tasks[TASK].decodings["greedy"]
        got = finished.decodings[model]
        assert got.aggregate["acc"].to_dict() == want.aggregate["accuracy"].to_dict()
        for tid, template in want.templates.items():
            assert got.templates[tid].metrics == {"acc": template.metrics["accuracy"]}
            assert template.ci is not None and got.templates[tid].ci is not None
            assert got.templates[tid].ci["acc"] == template.ci["accuracy"]
    assert results.paired is not None and results.model_groups is not None
    native_pairs = [p for p in results.paired[TASK]["greedy"] if p.metric == "accuracy"]
    assert [p.metric for p in finished.paired] == ["acc"] * len(native_pairs)
    assert [p.model_copy(update={"metric": "accuracy"}).to_dict() for p in finished.paired] == [
        p.to_dict() for p in native_pairs
    ]
    want_groups = results.model_groups[TASK]["greedy"]["accuracy"]
    assert finished.model_groups["acc"].to_dict() == want_groups.to_dict()


@pytest.mark.parametrize(
    ("scores", "needle"),
    [([0.5, 1.5], "not a number in [0, 1]"), ([0.5, float("nan")], "item 1"),
     ([None, 1.0], "None"), (["1", 0.0], "'1'")],
)  # fmt: skip
def test_given_scores_outside_0_1_are_refused(scores: list[Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        corpus.compute("given_score", scores, [None, None])
    assert corpus.compute("given_score", [0.25, 1.0], [None, None]) == 0.625
    # any finite scores (a BLEU, a log-likelihood): given_mean, its intervals not cut
    assert corpus.compute("given_mean", [-2.0, 40.0], [None, None]) == 19.0
    assert corpus.get("given_mean").value_range == (-float("inf"), float("inf"))
    with pytest.raises(ValueError, match="not a finite number"):
        corpus.compute("given_mean", [1.0, float("inf")], [None, None])


def test_a_task_file_cannot_name_given_score(tmp_path: Path) -> None:
    text = load_task(TASK).path.read_text(encoding="utf-8")
    path = tmp_path / "t.yaml"
    path.write_text(text.replace("metrics: [accuracy, mcc]", "metrics: [given_score]"))
    with pytest.raises(HakariInputError, match=r"given_score.*scores no answers"):
        load_task(path)


@pytest.mark.slow
def test_missing_cells_go_to_the_imputed_estimator(native: tuple) -> None:
    _, samples = native
    grid = _by_hand(samples, (GridMetric("accuracy", "accuracy"), GridMetric("mcc", "mcc")))
    cells = _cells(samples)
    gap = {c for c in list(cells["a"].answers)[::3]}
    for c in cells.values():
        for cell in gap:
            del c.answers[cell]
            c.fallbacks.discard(cell)
    assert missing_cells(grid, cells["a"]) == len(gap)
    with pytest.raises(MissingCells, match="imputed one fills"):
        finish_grid(grid, cells, Direct(), OPTIONS)
    assert cannot_estimate("label", ["accuracy", "mcc"]) is None
    assert "mcc" in str(cannot_estimate("label", ["accuracy", "mcc"], given=True))
    run = BudgetRun(design="imported", seed=0, stopped="budget")
    finished = finish_grid(grid, cells, Imputed(run), OPTIONS)
    dec = finished.decodings["a"]
    assert dec.budget is not None and dec.budget.design.name == "imported"
    assert dec.budget.design.cells_run == grid.size - len(gap)
    assert all(t.estimated and t.metrics_ci for t in dec.templates.values())
    assert dec.aggregate["accuracy"].estimated
    chosen = dec.budget.estimator.metrics
    assert set(chosen) == {"accuracy", "mcc"}
    assert chosen["mcc"].reason == "not a mean of item scores"
    assert finished.paired and all(p.estimated for p in finished.paired)
    assert finished.model_groups["accuracy"].estimated


@pytest.mark.slow
def test_given_scores_with_gaps_are_imputed_as_scores(native: tuple) -> None:
    _, samples = native
    grid = _by_hand(
        samples, (GridMetric("acc", "given_score"), GridMetric("acc_norm", "given_score"))
    )
    cells = _cells(samples, given=True)
    for c in cells.values():
        c.scores["acc_norm"] = dict(c.scores["acc"])
        for cell in list(c.answers)[::4]:
            del c.answers[cell]
    finished = finish_grid(grid, cells, Imputed(BudgetRun("imported", 0, "budget")), OPTIONS)
    dec = finished.decodings["b"]
    # the same scores under two names: the same estimates (one completion, two views)
    assert dec.aggregate["acc"].to_dict() == dec.aggregate["acc_norm"].to_dict()
    assert {p.metric for p in finished.paired} == {"acc", "acc_norm"}
    # which estimator made each metric's numbers, by key: two keys, one scorer, two records
    assert dec.budget is not None
    chosen = dec.budget.estimator.metrics
    assert set(chosen) == {"acc", "acc_norm"} and chosen["acc"] == chosen["acc_norm"]


@pytest.mark.slow
def test_a_grid_with_gaps_built_by_hand_finishes_as_a_native_budgeted_run(
    tmp_path: Path,
) -> None:
    """The imputed estimator through the seam: the cells of a native `--budget 2x` run,
    rebuilt by hand, give its numbers and its budget record."""
    evaluate(
        models=list(MODELS),
        tasks=[TASK],
        decodings=["greedy"],
        n_boot=OPTIONS.n_boot,
        budget="2x",
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / "run",
        backend_factory=lambda spec: FakeBackend(_answers(spec), name=spec),
    )
    results = EvalResults.read(tmp_path / "run" / "results.json")
    lines = (tmp_path / "run" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    samples = [json.loads(x) for x in lines]
    want = results.models["a"].tasks[TASK].decodings["greedy"]
    metrics = (GridMetric("accuracy", "accuracy"), GridMetric("mcc", "mcc"))
    # at 2x every instance ran (twice); the templates in the task's order, as results.json
    grid = GridTask(**{**vars(_by_hand(samples, metrics)), "template_ids": tuple(want.templates)})
    assert want.budget is not None and want.budget.design.grid_size == grid.size
    run = BudgetRun(
        design=want.budget.design.name,
        seed=want.budget.design.seed,
        stopped=want.budget.stopped,
        budget=want.budget.budget,
        rounds=want.budget.rounds,
    )
    finished = finish_grid(grid, _cells(samples), Imputed(run), OPTIONS)
    for model in MODELS:
        native = results.models[model].tasks[TASK].decodings["greedy"].to_dict()
        got = finished.decodings[model].to_dict()
        for key in ("templates", "aggregate", "budget"):
            assert got[key] == native[key], (model, key)
    assert results.paired is not None and results.model_groups is not None
    assert [p.to_dict() for p in finished.paired] == [
        p.to_dict() for p in results.paired[TASK]["greedy"]
    ]
    assert finished.model_groups["mcc"].to_dict() == (
        results.model_groups[TASK]["greedy"]["mcc"].to_dict()
    )

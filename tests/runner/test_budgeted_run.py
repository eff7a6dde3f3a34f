"""Budgeted and sequential runs (`--budget`, `--target-ci`, `--until-decided`): estimates
against a real grid, the rounds, the cache, what results.json and the reports mark."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend, hash_choice
from hakari.reports.inputs import load_inputs
from hakari.reports.markdown import markdown_report
from hakari.reports.page import build_html
from hakari.reports.terminal import print_report
from hakari.runner import evaluate
from hakari.tasks.loader import load_task
from hakari.tasks.prompts import iter_chunks
from tests.helpers.cli import assert_one_line, invoke, succeed
from tests.helpers.finetune import write_space_task
from tests.helpers.oracle import TASK, oracle_table
from tests.helpers.paths import FIXTURES

GRID = FIXTURES / "grids" / "gemma3-270m__demo_sentiment_en__greedy.json.gz"


def replay(grid_path: Path):
    """A responder that answers every prompt of the demo task as the stored real grid
    (Gemma 3 270M, greedy) did: the template's answer key for the stored label."""
    grid = json.loads(gzip.open(grid_path, "rt", encoding="utf-8").read())
    spec = load_task(grid["task"]).spec
    assert spec.data.instances is not None
    position = {row: k for k, row in enumerate(grid["rows"])}
    template_at = {tid: t for t, tid in enumerate(grid["template_ids"])}
    table: dict[str, str] = {}
    for chunk in iter_chunks(spec, spec.templates, spec.data.instances, 100):
        for rp in chunk:
            label = grid["labels"][grid["answers"][template_at[rp.template_id]][position[rp.index]]]
            assert rp.answers is not None
            table[rp.text] = next(k for k, v in rp.answers.items() if str(v) == label)
    return grid, lambda request: table[request.prompt]


def _run(tmp: Path, responder, **kwargs: Any):
    backends = kwargs.pop("backends", None)
    return evaluate(
        models=kwargs.pop("models", ["m"]),
        tasks=kwargs.pop("tasks", [TASK]),
        decodings=kwargs.pop("decodings", ["greedy"]),
        cache_dir=tmp / "cache",
        backend_factory=(
            (lambda spec: backends[spec]) if backends else (lambda spec: FakeBackend(responder))
        ),
        **kwargs,
    )


@pytest.mark.skipif(not GRID.exists(), reason=f"no stored real grid {GRID}")
def test_budget_on_a_real_grid_covers_the_full_grid(tmp_path: Path) -> None:
    grid, responder = replay(GRID)
    full = _run(tmp_path, responder, n_boot=200, output_dir=tmp_path / "full")
    full_dec = full.models["m"].tasks[TASK].decodings["greedy"]
    for metric, per_template in grid["full_grid"].items():  # the replay is the real run
        for tid, value in per_template.items():
            assert full_dec.templates[tid].metrics[metric] == pytest.approx(value)
    est = _run(tmp_path, responder, n_boot=200, budget="2x", output_dir=tmp_path / "est")
    dec = est.models["m"].tasks[TASK].decodings["greedy"]
    assert dec.budget is not None and dec.budget.design.cells_run == 2 * 32
    assert dec.generated == 0  # every cell was in the cache from the full run
    inside = []
    for metric in grid["metrics"]:
        truth, stats = full_dec.aggregate[metric], dec.aggregate[metric]
        for name in ("mean", "std", "sharpe"):
            low = getattr(stats, f"{name}_grid_ci_low")
            high = getattr(stats, f"{name}_grid_ci_high")
            assert low <= getattr(truth, name) <= high, (metric, name)
        # the population interval is wider than the full grid's own
        assert stats.sharpe_ci_low <= truth.sharpe <= stats.sharpe_ci_high
        for tid, tr in dec.templates.items():
            low, high = tr.metrics_ci[metric]
            inside.append(low <= full_dec.templates[tid].metrics[metric] <= high)
    assert sum(inside) / len(inside) >= 0.8


def random_answers(request: GenerationRequest) -> str:
    return hash_choice(request.prompt, ["1", "2", "A", "B", "positive", "negative", "yes", "no"])


def test_results_mark_every_estimate_and_a_full_run_has_no_budget_keys(tmp_path: Path) -> None:
    _run(tmp_path, random_answers, n_boot=100, budget="0.25", output_dir=tmp_path / "est")
    full = _run(tmp_path, random_answers, n_boot=100, output_dir=tmp_path / "full")
    on_disk = json.loads((tmp_path / "est" / "results.json").read_text(encoding="utf-8"))
    assert on_disk["config"]["budget"] == "0.25"
    dec = on_disk["models"]["m"]["tasks"][TASK]["decodings"]["greedy"]
    assert (
        dec["budget"]["design"]["cells_run"] == 48 and dec["budget"]["design"]["grid_size"] == 192
    )
    assert dec["budget"]["estimator"]["name"] == "latent-class multiple imputation"
    assert dec["budget"]["stopped"] == "budget" and len(dec["budget"]["rounds"]) == 1
    for template in dec["templates"].values():
        assert template["estimated"] is True and set(template["metrics_ci"]) == {"accuracy", "mcc"}
    assert sum(t["n"] for t in dec["templates"].values()) == 48
    for stats in dec["aggregate"].values():
        assert stats["estimated"] is True
        assert stats["sharpe_grid_ci_low"] <= stats["sharpe"] <= stats["sharpe_grid_ci_high"]
    samples = (tmp_path / "est" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(samples) == 48  # only the cells run
    text = (tmp_path / "full" / "results.json").read_text(encoding="utf-8")
    for key in ('"estimated"', '"budget"', "grid_ci", "metrics_ci", '"model_groups"'):
        assert key not in text
    assert full.models["m"].tasks[TASK].decodings["greedy"].budget is None


def test_reruns_and_a_later_full_run_pay_only_for_missing_cells(tmp_path: Path) -> None:
    first = _run(tmp_path, random_answers, n_boot=50, budget="2x")
    again = _run(tmp_path, random_answers, n_boot=50, budget="2x")
    more = _run(tmp_path, random_answers, n_boot=50, budget="3x")
    full = _run(tmp_path, random_answers, n_boot=50)

    def counts(res) -> tuple[int, int]:
        dec = res.models["m"].tasks[TASK].decodings["greedy"]
        return dec.generated, dec.cached

    assert counts(first) == (64, 0)
    assert counts(again) == (0, 64)
    assert counts(more) == (32, 64)  # the design is nested: 3x adds one level
    assert counts(full) == (192 - 96, 96)
    a = first.models["m"].tasks[TASK].decodings["greedy"].aggregate["accuracy"]
    b = again.models["m"].tasks[TASK].decodings["greedy"].aggregate["accuracy"]
    assert a == b  # same seed, same cells: the same estimates


@pytest.mark.slow
def test_target_ci_stops_when_reached_or_at_the_full_grid(tmp_path: Path) -> None:
    loose = _run(tmp_path, random_answers, n_boot=100, target_ci=0.5)
    dec = loose.models["m"].tasks[TASK].decodings["greedy"]
    assert dec.budget is not None and dec.budget.stopped == "target_ci"
    assert [r.cells for r in dec.budget.rounds] == [64]
    tight = _run(tmp_path, random_answers, n_boot=100, target_ci=1e-4)
    dec = tight.models["m"].tasks[TASK].decodings["greedy"]
    assert dec.budget is not None and dec.budget.stopped == "grid_full"
    assert [r.cells for r in dec.budget.rounds] == [64, 128, 192]
    assert dec.budget.design.fraction == 1.0
    capped = _run(tmp_path, random_answers, n_boot=100, target_ci=1e-4, budget="3x")
    dec = capped.models["m"].tasks[TASK].decodings["greedy"]
    assert dec.budget is not None and dec.budget.stopped == "budget"
    assert [r.cells for r in dec.budget.rounds] == [64, 96]


@pytest.mark.slow
def test_until_decided_stops_once_every_pair_differs(tmp_path: Path) -> None:
    table = oracle_table(TASK)
    backends = {
        "oracle": FakeBackend(lambda r: table[r.prompt], name="oracle"),
        "random": FakeBackend(random_answers, name="random"),
        "random2": FakeBackend(
            lambda r: hash_choice(r.prompt + "x", ["1", "2", "A", "B", "positive", "negative"]),
            name="random2",
        ),
    }
    res = _run(
        tmp_path,
        None,
        models=list(backends),
        backends=backends,
        n_boot=300,
        until_decided=True,
        output_dir=tmp_path / "run",
    )
    dec = res.models["oracle"].tasks[TASK].decodings["greedy"]
    assert dec.budget is not None
    # oracle vs the random ones is decided; random vs random2 is a tie, so the rounds go
    # on to the full grid
    assert dec.budget.stopped == "grid_full"
    assert dec.budget.decision_level == pytest.approx(0.05 / 3)
    groups = res.model_groups[TASK]["greedy"]["accuracy"]  # type: ignore[index]
    assert groups.estimated and groups.groups[0] == ["oracle"]
    verdicts = {(t.model_a, t.model_b): t.verdict for t in groups.tests}
    assert verdicts[("oracle", "random")] == "a_better"
    assert verdicts[("random", "random2")] == "tied"
    assert res.paired is not None
    assert all(c.estimated for c in res.paired[TASK]["greedy"])

    two = _run(
        tmp_path,
        None,
        models=["oracle", "random"],
        backends=backends,
        n_boot=300,
        until_decided=True,
    )
    dec = two.models["oracle"].tasks[TASK].decodings["greedy"]
    assert dec.budget is not None and dec.budget.stopped == "decided"
    assert dec.budget.design.cells_run == 64
    # one rule for every estimator (`estimators.compare`): the pair is compared and its
    # corrected test decided the stop, but groups are written from three models on
    assert two.paired is not None and len(two.paired[TASK]["greedy"]) == 2  # 2 metrics
    assert two.model_groups is None


def test_reports_say_what_is_estimated(tmp_path: Path) -> None:
    _run(tmp_path, random_answers, n_boot=100, budget="2x", output_dir=tmp_path / "est")
    _run(tmp_path, random_answers, n_boot=100, output_dir=tmp_path / "full")
    data = load_inputs([tmp_path / "est", tmp_path / "full"])
    assert list(data.models) == ["m (estimated)", "m (full grid)"]
    html = build_html(data)
    assert "≈ estimated from 33% of the grid" in html
    est = data.runs[0].results
    md = markdown_report(est)
    assert "≈ estimated from 33% of the grid (64 of 192 template × instance cells" in md
    assert "| mean | ≈" in md
    console = Console(record=True, width=200)
    print_report(est, console)
    assert "estimated from 33% of the grid" in console.export_text()
    full_md = markdown_report(data.runs[1].results)
    assert "≈" not in full_md and "estimated" not in full_md


def test_three_models_get_groups_in_a_full_run(tmp_path: Path) -> None:
    table = oracle_table(TASK)
    backends = {
        "a": FakeBackend(lambda r: table[r.prompt], name="a"),
        "b": FakeBackend(lambda r: table[r.prompt], name="b"),
        "c": FakeBackend(random_answers, name="c"),
    }
    res = _run(tmp_path, None, models=list(backends), backends=backends, n_boot=200)
    groups = res.model_groups[TASK]["greedy"]["accuracy"]  # type: ignore[index]
    assert not groups.estimated
    assert groups.groups == [["a", "b"], ["c"]]
    md = markdown_report(res)
    assert "which models differ · demo_sentiment_en · greedy · accuracy" in md
    assert "{a, b}  ·  {c}" in md


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--budget", "0"], "--budget"),
        (["--budget", "lots"], "--budget"),
        (["--budget", "1.5"], "--budget"),
        (["--target-ci", "-0.1", "--n-boot", "100"], "--target-ci"),
        (["--target-ci", "0.02"], "--n-boot must be at least 1"),
        (["--until-decided", "--n-boot", "100"], "at least two --model"),
    ],
)
def test_bad_budget_options_are_one_line_before_any_model_loads(
    no_model_loads: list[str], args: list[str], needle: str
) -> None:
    code, out = invoke("--tasks", TASK, *args)
    assert_one_line(code, out, needle)
    assert no_model_loads == []


@pytest.mark.slow
def test_a_budgeted_prompt_space_run_has_its_space_record(tmp_path: Path) -> None:
    """`--templates space:N --budget 2x` writes what the space tells (issue 37 §1):
    estimated from the same imputed replicates as the aggregate, marked, and shown by
    `hakari report` in the terminal, Markdown and HTML."""
    task = write_space_task(tmp_path, n_test=40)  # 8 templates × 40 instances
    run = tmp_path / "run"

    def respond(request: GenerationRequest) -> str:  # the enumerator decides its skill
        keys = ["1", "2", "3", "4"] if "1." in request.prompt else ["A", "B", "C", "D"]
        return hash_choice(request.prompt, keys[:1] * 3 + keys)

    res = _run(
        tmp_path, respond, tasks=[str(task)], templates="space:all", budget="2x",
        n_boot=200, output_dir=run,
    )  # fmt: skip
    dec = res.models["m"].tasks["toy_choice"].decodings["greedy"]
    assert dec.budget is not None and dec.budget.design.cells_run == 80
    assert dec.space is not None
    space = dec.space["accuracy"]
    assert space.estimated and space.n_templates == 8 and space.confidence == 0.95
    assert set(space.dimensions) == {"instruction", "enumerator", "answer_cue"}
    per_template = {tid: t.metrics["accuracy"] for tid, t in dec.templates.items()}
    assert space.percentiles[1].value == pytest.approx(
        float(np.median(list(per_template.values())))
    )
    enumerator = space.dimensions["enumerator"]
    assert enumerator.diff_ci_low is not None and enumerator.share_ci_low is not None
    assert all(level.ci_low is not None for level in enumerator.levels)
    written = json.loads((run / "results.json").read_text(encoding="utf-8"))
    on_disk = written["models"]["m"]["tasks"]["toy_choice"]["decodings"]["greedy"]["space"]
    assert on_disk["accuracy"]["estimated"] is True

    shown = succeed(["report", str(run)]).output
    assert "8 templates of a space (≈ estimated from part of the grid)" in shown
    assert "what each dimension does" in shown
    md = succeed(["report", str(run), "--markdown"]).output
    assert "8 templates of a space (≈ estimated from part of the grid)" in md
    page = tmp_path / "r.html"
    succeed(["report", str(run), "--html", str(page)])
    html = page.read_text("utf-8")
    assert "what each dimension of the prompt space does" in html
    assert "(≈ estimated from part of the grid)" in html and "enumerator" in html

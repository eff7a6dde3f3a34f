"""The jaster leaderboard view (`runner/leaderboard.py`): llm-jp-eval v1.3.0's category
averages and Nejumi's 0-/2-shot average. One cheap `fake:` run gives the results'
layout; the tests then put hand-made per-template scores into it and check the view
against them: a category's number is the mean of its sets' scores on their llm-jp-eval
metric, Nejumi's the mean of the 0- and 2-shot scores, a category with a set missing is
partial."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import hakari
from hakari.aggregate.intervals import pooled_mean_interval
from hakari.reports.inputs import load_inputs
from hakari.reports.markdown import markdown_report
from hakari.reports.page import build_html
from hakari.reports.terminal import print_leaderboards
from hakari.results import EvalResults, Leaderboard
from hakari.runner.leaderboard import leaderboard_views
from hakari.scoring import corpus
from hakari.tasks.families import builtin_family_paths, family_members, load_tasks
from tests.helpers.paths import SHARED

DATA = SHARED / "datasets"
needs_data = pytest.mark.skipif(
    not (DATA / "jaster").is_dir(), reason="../shared/datasets/jaster absent"
)
SETS = ["jamp", "jsick", "jemhopqa", "niilc", "mawps"]
TEMPLATES = ["0-0", "0-2", "0-4", "1-0", "1-2"]
MODEL = "fake:entailment"
Run = tuple[dict, EvalResults, Path]  # results.json as JSON, as read, the run folder


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    folder = tmp_path_factory.mktemp("leaderboard")
    hakari.evaluate(
        models=[MODEL],
        tasks=[f"jaster:{s}" for s in SETS],
        decodings=["greedy"],
        templates=TEMPLATES,
        data_dir=DATA,
        cache_dir=folder / "cache",
        output_dir=folder / "run",
        limit=3,
        n_boot=50,
    )
    text = (folder / "run" / "results.json").read_text()
    return json.loads(text), EvalResults.model_validate_json(text), folder / "run"


def _hand_made(
    run: Run, metric_of: dict[str, str]
) -> tuple[EvalResults, dict[str, dict[str, float]]]:
    """Per set, a distinct score per template on its leaderboard metric (and a decoy on
    every other metric), written into a copy of the run's results; returns the copy and
    set -> template -> score."""
    results = run[1].model_copy(deep=True)
    rng = np.random.default_rng(7)
    scores: dict[str, dict[str, float]] = {}
    for name in SETS:
        run = results.models[MODEL].tasks[name].decodings["greedy"]
        scores[name] = {}
        for tid, template in run.templates.items():
            value = float(rng.uniform())
            scores[name][tid] = value
            decoy = {m: 9.0 for m in template.metrics}  # other metrics must not be read
            template.metrics = decoy | {metric_of[name]: value}
    return results, scores


METRIC_OF = {
    "jamp": "llmjp_exact_match",
    "jsick": "llmjp_exact_match",
    "jemhopqa": "char_f1",
    "niilc": "char_f1",
    "mawps": "llmjp_exact_match",
}


def _view(results: EvalResults) -> Leaderboard:
    views = leaderboard_views(results, load_tasks([f"jaster:{s}" for s in SETS]), 1.0)
    assert views is not None
    return views["jaster"][MODEL]["greedy"]


@needs_data
def test_run_writes_the_view(run: Run) -> None:
    doc = run[0]
    view = doc["leaderboards"]["jaster"][MODEL]["greedy"]
    assert view["reference_template"] == "0-4" and "llm-jp-eval v1.3.0" in view["source"]
    assert set(view["categories"]) == {"NLI", "QA", "MR"}  # no set of RC, MC, HE, EL, FA ran
    nli = view["categories"]["NLI"]
    assert nli["members"] == {"jamp": "llmjp_exact_match", "jsick": "llmjp_exact_match"}
    assert nli["missing"] == ["janli", "jnli", "jsem"] and nli["partial"] is True
    assert view["categories"]["QA"]["partial"] is False
    assert view["categories"]["MR"]["missing"] == []
    for score in [c["score"] for c in view["categories"].values()] + [view["nejumi"]]:
        assert score["ci_low"] <= score["mean"] <= score["ci_high"]  # the bootstrap ran
        assert 0.0 <= score["ci_low"] and score["ci_high"] <= 1.0


@needs_data
def test_terminal_markdown_and_html_show_the_view(run: Run) -> None:
    console = Console(record=True, width=120)
    print_leaderboards(run[1], console)
    text = console.export_text()
    assert "NLI (partial)" in text and "jamp, jsick" in text and "QA " in text
    assert "QA (partial)" not in text and "Nejumi" in text
    markdown = markdown_report(run[1])
    assert "| NLI (partial) | jamp, jsick | " in markdown
    assert "| QA | jemhopqa, niilc | " in markdown
    page = build_html(load_inputs([run[2]]), samples_per_template=0)
    assert '<table class="leaderboard-view">' in page and "NLI (partial)" in page


@needs_data
def test_category_is_the_mean_of_its_sets_llmjp_scores(run: Run) -> None:
    results, scores = _hand_made(run, METRIC_OF)
    view = _view(results)
    qa = view.categories["QA"]
    assert qa.reference == pytest.approx((scores["jemhopqa"]["0-4"] + scores["niilc"]["0-4"]) / 2)
    assert qa.members == {"jemhopqa": "char_f1", "niilc": "char_f1"} and not qa.partial
    nli = view.categories["NLI"]
    assert nli.partial and nli.missing == ["janli", "jnli", "jsem"]
    assert nli.reference == pytest.approx((scores["jamp"]["0-4"] + scores["jsick"]["0-4"]) / 2)
    assert nli.score is not None
    per_template = {t: (scores["jamp"][t] + scores["jsick"][t]) / 2 for t in TEMPLATES}
    assert nli.score.per_template == pytest.approx(per_template)
    assert nli.score.mean == pytest.approx(np.mean(list(per_template.values())))
    assert nli.score.std == pytest.approx(np.std(list(per_template.values())))
    assert view.categories["MR"].reference == pytest.approx(scores["mawps"]["0-4"])


@needs_data
def test_nejumi_is_the_mean_of_zero_and_two_shot(run: Run) -> None:
    results, scores = _hand_made(run, METRIC_OF)
    nejumi = _view(results).nejumi
    assert nejumi is not None and list(nejumi.per_template) == ["0", "1"]  # 2-* ran no shots
    for wording in ("0", "1"):
        expected = np.mean([(s[f"{wording}-0"] + s[f"{wording}-2"]) / 2 for s in scores.values()])
        assert nejumi.per_template[wording] == pytest.approx(expected)
    assert _view(results).nejumi_reference == pytest.approx(nejumi.per_template["0"])


@needs_data
def test_nejumi_pairs_a_spaces_generated_ids_by_their_shots_level(run: Run) -> None:
    results, scores = _hand_made(run, METRIC_OF)
    space_ids = {"1-0": "terse.plain.none.0", "1-2": "terse.plain.none.2", "0-4": "x.y.z.4"}
    for name in SETS:
        decoding = results.models[MODEL].tasks[name].decodings["greedy"]
        decoding.templates = {space_ids.get(t, t): r for t, r in decoding.templates.items()}
        scores[name] = {space_ids.get(t, t): v for t, v in scores[name].items()}
    nejumi = _view(results).nejumi
    assert nejumi is not None and list(nejumi.per_template) == ["0", "terse.plain.none"]
    space = np.mean(
        [(s["terse.plain.none.0"] + s["terse.plain.none.2"]) / 2 for s in scores.values()]
    )
    assert nejumi.per_template["terse.plain.none"] == pytest.approx(space)


@needs_data
def test_a_set_without_its_metric_leaves_its_category_out(run: Run) -> None:
    results, _ = _hand_made(run, METRIC_OF | {"mawps": "char_f1"})  # mawps: no char_f1 to write
    for template in results.models[MODEL].tasks["mawps"].decodings["greedy"].templates.values():
        del template.metrics["llmjp_exact_match"]
    assert "MR" not in _view(results).categories


def test_pooled_interval_over_templates_and_items() -> None:
    observed = np.array([0.2, 0.4, 0.6, 0.5])
    rng = np.random.default_rng(0)
    widths = []
    for item_noise in (0.01, 0.1):
        every = observed + rng.normal(0, item_noise, (400, 4))
        for method in ("studentized", "percentile"):
            ci = pooled_mean_interval(
                observed, every, method=method, confidence=0.95, bounds=(0.0, 1.0)
            )
            assert 0.0 <= ci.low < 0.425 < ci.high <= 1.0
        widths.append(ci.high - ci.low)
    assert widths[1] > widths[0]  # the items' part adds to the templates'


def test_the_family_files_view_names_each_sets_own_metric() -> None:
    raw = family_members(builtin_family_paths()["jaster"])[0]
    categories = raw["leaderboard"]["categories"]
    assert raw["leaderboard"]["reference_template"] == "0-4"
    assert list(categories) == ["NLI", "QA", "RC", "MC", "HE", "EL", "FA", "MR"]
    tasks = {t.name: t for t in load_tasks(["jaster"])}
    for sets in categories.values():
        for name, metric in sets.items():
            assert metric in corpus.names()
            if name in tasks:  # a jaster set here: the metric is one it is scored with
                assert metric in [str(m) for m in tasks[name].spec.metrics], name
    named = {s for sets in categories.values() for s in sets}
    # every jaster set here is in a category, but the two v1.3.0 does not have
    assert set(tasks) - named == {"mgsm", "commonsensemoralja"}

"""The readers on the real producers' logs (tests/fixtures/producers: lm-evaluation-harness
0.4.13, inspect_ai 0.3.285 and the every-eval-ever 0.3.0 converters on the packaged
SmolLM2, three templates of demo_sentiment_en): every per-template score equals the value
the producer itself reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hakari.interop.api import import_run
from hakari.interop.finish import Settings
from hakari.interop.options import ImportOptions
from tests.helpers.paths import FIXTURES

PRODUCERS = FIXTURES / "producers"
MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
TASK = "demo_sentiment_en"
TEMPLATES = ("0-1", "0-2", "1-2")
SETTINGS = Settings(n_boot=100)


def _lm_eval_results() -> dict[str, dict[str, float]]:
    (path,) = (PRODUCERS / "lm-eval").rglob("results_*.json")
    return json.loads(path.read_text())["results"]


def _templates(run: Path, model: str, decoding: str) -> dict[str, dict[str, float]]:
    data = json.loads(run.read_text())
    dec = data["models"][model]["tasks"][TASK]["decodings"][decoding]
    return {t: r["metrics"] for t, r in dec["templates"].items()}


def test_lm_eval_group_equals_lm_evals_results(tmp_path: Path) -> None:
    run, results = import_run(
        "lm-eval", [PRODUCERS / "lm-eval"], tmp_path / "run", ImportOptions(group=TASK), SETTINGS
    )
    expected = _lm_eval_results()
    got = _templates(run, MODEL, "loglik")
    for template in TEMPLATES:
        for metric in ("acc", "acc_norm"):
            want = expected[f"{TASK}_{template}"][f"{metric},none"]
            assert got[f"{TASK}_{template}"][metric] == pytest.approx(want, abs=1e-12)
    assert results.imported.producers["lm_eval"] == "0.4.13"
    assert results.imported.notes == []
    sample = json.loads((run.parent / "samples.jsonl").read_text().splitlines()[0])
    assert sample["answer"] in ("0", "1") and sample["gold"] in ("0", "1")  # argmax, target


def test_eee_of_lm_eval_equals_lm_evals_results(tmp_path: Path) -> None:
    """The converter's records, one a subtask and metric, and one for the group (whose
    instances are one template's under the group's name): the pattern leaves it out."""
    options = ImportOptions(templates=f"{TASK}_{{template}}", task=TASK)
    run, results = import_run(
        "eee", [PRODUCERS / "eee" / "lm-eval"], tmp_path / "run", options, SETTINGS
    )
    expected = _lm_eval_results()
    got = _templates(run, MODEL, "imported")
    assert sorted(got) == list(TEMPLATES)
    for template in TEMPLATES:
        for metric in ("acc", "acc_norm"):
            want = expected[f"{TASK}_{template}"][f"{metric},none"]
            assert got[template][metric] == pytest.approx(want, abs=1e-12)
    assert results.imported.producers["lm_eval"]


def test_eee_of_inspect_equals_the_converted_aggregates(tmp_path: Path) -> None:
    options = ImportOptions(templates=f"{TASK}_{{template}}", task=TASK)
    run, _ = import_run("eee", [PRODUCERS / "eee" / "inspect"], tmp_path / "run", options, SETTINGS)
    got = _templates(run, MODEL, "imported")
    for path in (PRODUCERS / "eee" / "inspect").rglob("*.json"):
        for result in json.loads(path.read_text())["evaluation_results"]:
            template = result["evaluation_name"].removeprefix(f"{TASK}_")
            metric = result["evaluation_result_id"]
            assert got[template][metric] == pytest.approx(result["score_details"]["score"])


@pytest.mark.parametrize("templates", ["arg:template", "metadata:template", f"{TASK}_{{template}}"])
def test_inspect_logs_equal_inspects_own_accuracy(tmp_path: Path, templates: str) -> None:
    pytest.importorskip("inspect_ai", reason="inspect_ai (hakari[interop]) is not installed")
    from inspect_ai.log import read_eval_log

    options = ImportOptions(templates=templates, task=TASK)
    run, results = import_run(
        "inspect", [PRODUCERS / "inspect"], tmp_path / "run", options, SETTINGS
    )
    got = _templates(run, f"hf/{MODEL}", "generate")
    for path in sorted((PRODUCERS / "inspect").glob("*.eval")):
        log = read_eval_log(str(path), header_only=True)
        template = log.eval.task_args["template"]
        (score,) = [s for s in log.results.scores if s.name == "match"]
        assert got[template]["match"] == pytest.approx(score.metrics["accuracy"].value)
    assert results.imported.producers["inspect_ai"] == "0.3.285"

"""The lm-evaluation-harness reader on logs in lm_eval 0.4.13's `--log_samples` format
(tests/fixtures/interop/lm_eval: two models, three prompt variants of one multiple-choice
task, a group naming them): every per-template score equals lm-eval's own aggregate in
results_*.json, acc and acc_norm both read, the variants mapped by group or pattern."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hakari.errors import HakariInputError
from hakari.interop.api import import_run
from hakari.interop.finish import Settings
from hakari.interop.options import ImportOptions
from tests.helpers.paths import FIXTURES

LM_EVAL = FIXTURES / "interop" / "lm_eval"
SETTINGS = Settings(n_boot=100)


def _lm_results() -> dict[str, dict[str, dict[str, float]]]:
    out = {}
    for path in LM_EVAL.rglob("results_*.json"):
        data = json.loads(path.read_text())
        out[data["model_name"]] = data["results"]
    return out


@pytest.mark.parametrize(
    "options",
    [
        ImportOptions(group="demo_mc"),
        ImportOptions(templates="demo_mc_p{template}", task="demo_mc"),
    ],
    ids=["group", "pattern"],
)
def test_every_template_equals_lm_evals_own_aggregate(
    tmp_path: Path, options: ImportOptions
) -> None:
    _, results = import_run("lm-eval", [LM_EVAL], tmp_path / "run", options, SETTINGS)
    expected = _lm_results()
    assert set(results.models) == set(expected)
    for model, per_task in expected.items():
        dec = results.models[model].tasks["demo_mc"].decodings["loglik"]
        assert results.models[model].tasks["demo_mc"].metrics == ["acc", "acc_norm"]
        for lm_task, values in per_task.items():
            template = lm_task if options.group else lm_task.removeprefix("demo_mc_p")
            for metric in ("acc", "acc_norm"):
                assert dec.templates[template].metrics[metric] == pytest.approx(
                    values[f"{metric},none"], abs=1e-12
                )
    assert results.imported.producers == {"lm_eval": "0.4.13", "transformers": "5.8.1"}
    assert results.imported.notes == []  # the samples' means agree with results_*.json
    assert len(results.paired["demo_mc"]["loglik"]) == 2  # acc and acc_norm


def test_samples_keep_prompt_answer_and_gold(tmp_path: Path) -> None:
    run, _ = import_run(
        "lm-eval",
        [LM_EVAL],
        tmp_path / "run",
        ImportOptions(group="demo_mc", scores=("acc",)),
        SETTINGS,
    )
    first = json.loads((run.parent / "samples.jsonl").read_text().splitlines()[0])
    assert first["prompt"].startswith("Q: q0")
    assert first["gold"] == "0" and first["answer"] in {"0", "1", "2", "3"}
    assert first["scores"] == {"acc": float(first["answer"] == first["gold"])}
    assert first["filter"] == "none" and len(first["doc_hash"]) == 64


def test_a_mismatch_with_the_results_file_is_said(tmp_path: Path) -> None:
    copy = tmp_path / "lm"
    shutil.copytree(LM_EVAL, copy)
    results = next(copy.rglob("results_*.json"))
    data = json.loads(results.read_text())
    data["results"]["demo_mc_p0"]["acc,none"] = 0.123
    results.write_text(json.dumps(data))
    _, imported = import_run(
        "lm-eval", [copy], tmp_path / "run", ImportOptions(group="demo_mc"), SETTINGS
    )
    (note,) = imported.imported.notes
    assert "demo_mc_p0: the samples' mean acc" in note and "0.123000" in note


def test_several_filters_need_one_chosen(tmp_path: Path) -> None:
    copy = tmp_path / "lm"
    shutil.copytree(LM_EVAL, copy)
    for sample in copy.rglob("samples_*.jsonl"):
        lines = [json.loads(line) for line in sample.read_text().splitlines()]
        twice = lines + [{**line, "filter": "strict-match"} for line in lines]
        sample.write_text("".join(json.dumps(line) + "\n" for line in twice))
    with pytest.raises(HakariInputError, match=r"several filters .* choose one with --filter"):
        import_run("lm-eval", [copy], tmp_path / "a", ImportOptions(group="demo_mc"), SETTINGS)
    _, results = import_run(
        "lm-eval",
        [copy],
        tmp_path / "b",
        ImportOptions(group="demo_mc", lm_filter="strict-match"),
        SETTINGS,
    )
    assert results.models["HuggingFaceTB/SmolLM2-135M-Instruct"].tasks["demo_mc"].n_instances == 12


def test_without_a_mapping_each_lm_eval_task_is_a_task(tmp_path: Path) -> None:
    """Three one-template tasks: too few templates is no error (std 0), said by the
    numbers; the user is expected to map variants with --group or --templates."""
    _, results = import_run("lm-eval", [LM_EVAL], tmp_path / "run", settings=SETTINGS)
    tasks = results.models["HuggingFaceTB/SmolLM2-135M-Instruct"].tasks
    assert sorted(tasks) == ["demo_mc_p0", "demo_mc_p1", "demo_mc_p2"]

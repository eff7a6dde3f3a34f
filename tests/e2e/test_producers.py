"""The real producers of `hakari import`'s inputs, rerun and imported (issue 35):
lm-evaluation-harness 0.4.13 (`hf` model, `--log_samples`) and inspect_ai 0.3.285 (`hf/`
provider) in hakari's venv, Every Eval Ever 0.3.0 (its converters on both logs, then its
validator) in the venv of scripts/install-eee.sh, offline on the packaged SmolLM2 in fp32.

Two kinds of check on the fresh outputs. `hakari import` of each gives, per template, the
number the producer itself reported (lm-eval's results_*.json, inspect's metrics, the
converter's scores), and `hakari export --format eee` of the imported runs passes Every
Eval Ever's validator. And a rerun writes the committed logs' structure (file names, task
names, per-sample fields) and numbers: exact on this CPU (fp32, greedy; the closest pair of
choice log-likelihoods in the fixtures is 0.0066 apart, and running torch on 1 thread
instead of 2 moves them by 1.2e-5). The reruns skip with a reason without the producers
(hakari's dev extra, scripts/install-eee.sh); the checks of the committed files alone
always run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import succeed
from tests.helpers.producers import (
    MODEL_LINK,
    PRODUCERS,
    TASK,
    TEMPLATES,
    eee_validate,
    missing_producers,
    run_all,
    validation_reports,
    validation_warnings,
)

LM_EVAL_DIR = MODEL_LINK.replace("/", "__")  # the folder lm-eval names after the model
SUBTASKS = [f"{TASK}_{t}" for t in TEMPLATES]
METRICS = ("acc", "acc_norm")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def lm_eval_files(root: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """(results_*.json, {subtask: its samples rows}) of one lm-eval output folder."""
    folder = root / LM_EVAL_DIR
    (results_path,) = folder.glob("results_*.json")
    samples = {}
    for path in sorted(folder.glob("samples_*.jsonl")):
        match = re.fullmatch(r"samples_(.+)_(\d{4}-\d\d-\d\dT[\d.-]+)\.jsonl", path.name)
        assert match, path.name
        samples[match.group(1)] = read_jsonl(path)
    return json.loads(results_path.read_text()), samples


def eee_records(root: Path) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """{<benchmark>/<developer>/<model>: (aggregate record, its instance rows)} under
    root/data (the uuid in the file names is random at each conversion)."""
    records = {}
    for path in sorted((root / "data").glob("*/*/*/*.json")):
        key = str(path.parent.relative_to(root / "data"))
        assert key not in records, f"two records for {key}"
        records[key] = (
            json.loads(path.read_text()),
            read_jsonl(path.with_name(f"{path.stem}_samples.jsonl")),
        )
    return records


def result_scores(record: dict[str, Any]) -> list[tuple[str, str, float]]:
    return [(r["evaluation_result_id"], r["evaluation_name"], r["score_details"]["score"])
            for r in record["evaluation_results"]]  # fmt: skip


def instance_scores(rows: list[dict[str, Any]]) -> list[tuple[str, str, float]]:
    return sorted(
        (r["sample_id"], r["evaluation_result_id"], r["evaluation"]["score"]) for r in rows
    )


def inspect_summary(path: Path) -> dict[str, Any]:
    """What an inspect log holds (task, arguments, scores, samples), read with inspect_ai's
    own reader (`.eval` members are Zstandard-compressed: Python's zipfile cannot read them
    before 3.14)."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path))
    assert log.results is not None and log.samples is not None, path
    return {
        "version": log.version,
        "status": log.status,
        "task": log.eval.task,
        "task_registry_name": log.eval.task_registry_name,
        "task_args": log.eval.task_args,
        "model": log.eval.model,
        "model_args": log.eval.model_args,
        "scores": {s.name: {k: m.value for k, m in s.metrics.items()} for s in log.results.scores},
        "samples": [
            {
                "id": s.id,
                "epoch": s.epoch,
                "target": s.target,
                "metadata": s.metadata,
                "fields": sorted(s.model_dump(exclude_none=True)),
                "scores": {k: v.value for k, v in (s.scores or {}).items()},
            }
            for s in log.samples
        ],
    }


def imported_templates(run: Path, model: str, decoding: str) -> dict[str, dict[str, float]]:
    """{template: {metric: score}} of an imported run's results.json."""
    data = json.loads((run / "results.json").read_text())
    templates = data["models"][model]["tasks"][TASK]["decodings"][decoding]["templates"]
    return {name: record["metrics"] for name, record in templates.items()}


# --- the committed files alone: what the importer's tests rely on ------------------------


def test_committed_lm_eval_accuracies_are_the_means_of_their_samples() -> None:
    results, samples = lm_eval_files(PRODUCERS / "lm-eval")
    assert results["lm_eval_version"] == "0.4.13"
    assert results["group_subtasks"] == {TASK: SUBTASKS}
    assert sorted(samples) == SUBTASKS
    for task, template in zip(SUBTASKS, TEMPLATES, strict=True):
        assert results["configs"][task]["metadata"]["template"] == template
        assert [row["doc_id"] for row in samples[task]] == list(range(8))
        for metric in METRICS:
            per_sample = [row[metric] for row in samples[task]]
            assert results["results"][task][f"{metric},none"] == sum(per_sample) / len(per_sample)


def test_committed_eee_records_carry_lm_eval_and_inspect_numbers() -> None:
    results, _ = lm_eval_files(PRODUCERS / "lm-eval")
    from_lm_eval = eee_records(PRODUCERS / "eee" / "lm-eval")
    assert sorted(key.split("/")[0] for key in from_lm_eval) == [TASK, *SUBTASKS]
    for key, (record, rows) in from_lm_eval.items():
        task = key.split("/")[0]
        assert record["schema_version"] == "0.3.0"
        for metric, name, score in result_scores(record):
            assert name == task
            assert score == results["results"][task][f"{metric},none"]
        assert len(rows) == 8 * len(METRICS)  # a row a doc and a metric (the group: see README)
    from_inspect = eee_records(PRODUCERS / "eee" / "inspect")
    assert sorted(key.split("/")[0] for key in from_inspect) == SUBTASKS
    for record, rows in from_inspect.values():
        ((metric, _, score),) = result_scores(record)
        assert metric == "match:accuracy"
        assert score == sum(r["evaluation"]["score"] for r in rows) / len(rows)


# --- the producers rerun ----------------------------------------------------------------


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """One run of every producer, its work folder (the seconds: docs/dependencies.md)."""
    reason = missing_producers()
    if reason:
        pytest.skip(reason)
    model_folder: Path = request.getfixturevalue("smollm2_folder")
    workdir = tmp_path_factory.mktemp("producers")
    for run in run_all(workdir, model_folder):
        print(f"{run.name}: {run.seconds:.1f} s")
    return workdir


@pytest.mark.slow
def test_lm_eval_rerun_matches_the_committed_results(produced: Path) -> None:
    new_results, new_samples = lm_eval_files(produced / "lm-eval")
    old_results, old_samples = lm_eval_files(PRODUCERS / "lm-eval")
    assert new_results.keys() == old_results.keys()
    assert new_results["group_subtasks"] == old_results["group_subtasks"]
    assert new_results["results"].keys() == old_results["results"].keys()
    for task in [*SUBTASKS, TASK]:
        for metric in METRICS:
            key = f"{metric},none"
            assert new_results["results"][task][key] == old_results["results"][task][key], (
                task,
                key,
            )
    for task in SUBTASKS:
        new_config, old_config = new_results["configs"][task], old_results["configs"][task]
        assert new_config.keys() == old_config.keys()
        for field in ("doc_to_text", "doc_to_choice", "doc_to_target", "metadata"):
            assert new_config[field] == old_config[field], (task, field)
    assert new_samples.keys() == old_samples.keys()
    for task, old_rows in old_samples.items():
        new_rows = new_samples[task]
        assert [r.keys() for r in new_rows] == [r.keys() for r in old_rows]
        for new, old in zip(new_rows, old_rows, strict=True):
            for field in (
                "doc_id",
                "doc",
                "target",
                "arguments",
                "doc_hash",
                "prompt_hash",
                *METRICS,
            ):
                assert new[field] == old[field], (task, new["doc_id"], field)
            new_ll = [float(choice[0]) for choice in new["filtered_resps"]]
            old_ll = [float(choice[0]) for choice in old["filtered_resps"]]
            assert new_ll == pytest.approx(old_ll, abs=1e-4)


@pytest.mark.slow
def test_inspect_rerun_matches_the_committed_logs(produced: Path) -> None:
    new_logs = sorted((produced / "inspect").glob("*.eval"))
    old_logs = sorted((PRODUCERS / "inspect").glob("*.eval"))
    assert len(new_logs) == len(old_logs) == len(TEMPLATES)
    summaries = sorted(
        (inspect_summary(path) for path in [*new_logs, *old_logs]), key=lambda log: log["task"]
    )
    new, old = summaries[0::2], summaries[1::2]  # each task twice: sorted() is stable
    assert [log["task"] for log in old] == SUBTASKS
    for new_log, old_log, template in zip(new, old, TEMPLATES, strict=True):
        assert new_log["status"] == "success"
        assert new_log["task_args"] == {"template": template}
        assert all(s["metadata"]["template"] == template for s in new_log["samples"])
        assert new_log == old_log  # task, model, scores, every sample's fields and score


@pytest.mark.slow
def test_every_eval_ever_reconversion_matches_the_committed_records(produced: Path) -> None:
    for source in ("lm-eval", "inspect"):
        reports = validation_reports(produced / f"eee-{source}-validate.log")  # run_all's
        assert reports and validation_warnings(reports) == []
        new, old = eee_records(produced / "eee" / source), eee_records(PRODUCERS / "eee" / source)
        assert new.keys() == old.keys(), source
        for key, (old_record, old_rows) in old.items():
            new_record, new_rows = new[key]
            assert new_record.keys() == old_record.keys(), key
            assert new_record["model_info"] == old_record["model_info"], key
            assert result_scores(new_record) == result_scores(old_record), key
            assert [r.keys() for r in new_rows] == [r.keys() for r in old_rows], key
            assert instance_scores(new_rows) == instance_scores(old_rows), key
            assert [r["input"] for r in new_rows] == [r["input"] for r in old_rows], key


# --- the fresh outputs imported: the producers' own numbers, and export's validity ------------


def hakari_import(source: str, path: Path, run: Path, *mapping: str) -> Path:
    succeed(["import", source, str(path), *mapping, "--n-boot", "100", "--output", str(run)])
    return run


@pytest.mark.slow
def test_import_of_fresh_lm_eval_logs_gives_lm_evals_own_accuracies(
    produced: Path, tmp_path: Path
) -> None:
    results, _ = lm_eval_files(produced / "lm-eval")
    run = hakari_import("lm-eval", produced / "lm-eval", tmp_path / "run", "--group", TASK)
    got = imported_templates(run, MODEL_LINK, "loglik")
    assert sorted(got) == SUBTASKS
    for task in SUBTASKS:
        for metric in METRICS:
            assert got[task][metric] == pytest.approx(results["results"][task][f"{metric},none"],
                                                      abs=1e-12), (task, metric)  # fmt: skip
    imported = json.loads((run / "results.json").read_text())["imported"]
    assert imported["producers"]["lm_eval"] == "0.4.13"
    assert imported["notes"] == []  # every template's mean agreed with results_*.json
    reports = eee_validate(hakari_export_eee(run, tmp_path / "eee"), log=tmp_path / "v.log")
    assert validation_warnings(reports) == []


@pytest.mark.slow
@pytest.mark.parametrize("templates", ["arg:template", "metadata:template", f"{TASK}_{{template}}"])
def test_import_of_fresh_inspect_logs_gives_inspects_own_accuracies(
    produced: Path, tmp_path: Path, templates: str
) -> None:
    run = hakari_import("inspect", produced / "inspect", tmp_path / "run",
                        "--templates", templates, "--task", TASK)  # fmt: skip
    got = imported_templates(run, f"hf/{MODEL_LINK}", "generate")
    logs = [inspect_summary(path) for path in sorted((produced / "inspect").glob("*.eval"))]
    assert sorted(got) == sorted(log["task_args"]["template"] for log in logs) == list(TEMPLATES)
    for log in logs:
        template = log["task_args"]["template"]
        assert got[template]["match"] == pytest.approx(log["scores"]["match"]["accuracy"],
                                                       abs=1e-12), template  # fmt: skip
    if templates == "arg:template":
        reports = eee_validate(hakari_export_eee(run, tmp_path / "eee"), log=tmp_path / "v.log")
        assert validation_warnings(reports) == []


@pytest.mark.slow
@pytest.mark.parametrize("source", ["lm-eval", "inspect"])
def test_import_of_fresh_eee_records_gives_the_converters_scores(
    produced: Path, tmp_path: Path, source: str
) -> None:
    root = produced / "eee" / source
    run = hakari_import("eee", root, tmp_path / "run",
                        "--templates", f"{TASK}_{{template}}", "--task", TASK)  # fmt: skip
    records = eee_records(root)
    ((model,),) = {tuple(json.loads((run / "results.json").read_text())["models"])}
    got = imported_templates(run, model, "imported")
    assert sorted(got) == list(TEMPLATES)
    checked = 0
    for key, (record, _) in records.items():
        template = key.split("/")[0].removeprefix(f"{TASK}_")
        if template == TASK:  # the lm-eval group's record: not a template (README)
            continue
        for metric, _, score in result_scores(record):
            assert got[template][metric] == pytest.approx(score, abs=1e-12), (key, metric)
            checked += 1
    assert checked == len(TEMPLATES) * (len(METRICS) if source == "lm-eval" else 1)


def hakari_export_eee(run: Path, root: Path) -> Path:
    succeed(["export", str(run), "--format", "eee", "--output", str(root)])
    return root

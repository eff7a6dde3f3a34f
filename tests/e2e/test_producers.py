"""The real producers of `hakari import`'s inputs, rerun against the logs committed under
tests/fixtures/producers/ (issue 35): lm-evaluation-harness 0.4.13 (`hf` model,
`--log_samples`), inspect_ai 0.3.285 (`hf/` provider) and Every Eval Ever 0.3.0 (its
converters on both logs, then its validator), offline on the packaged SmolLM2 in fp32.

A rerun must write the same structure (file names, task names, per-sample fields) and
the same numbers: the per-template accuracies of lm-eval's results_*.json, every
per-sample score, inspect's metrics, Every Eval Ever's scores. Exact equality holds on
this CPU (fp32, greedy; the closest pair of choice log-likelihoods in the fixtures is
0.0066 apart, and running torch on 1 thread instead of 2 moves them by 1.2e-5). The
reruns skip with a reason without the venv of scripts/install-producers.sh; the checks
of the committed files alone always run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.producers import (
    MODEL_LINK,
    PRODUCERS,
    TASK,
    TEMPLATES,
    inspect_summaries,
    missing_venv,
    run_all,
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
    """One run of every producer, its work folder: 3 min of CPU; 7-10 min of wall time on
    the shared 2-core machine under a load of 9-14 (lm-eval 235 s, inspect 189 s, Every
    Eval Ever 28 s)."""
    reason = missing_venv()
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
        inspect_summaries([*new_logs, *old_logs], workdir=produced), key=lambda log: log["task"]
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
        validated = (produced / f"eee-{source}-validate.log").read_text()
        assert "All files passed validation" in validated, validated[-2000:]
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

"""Hostile round five (issue 43), wrong numbers: the statistics of an imported table
checked by hand (answers against golds of another type, names split by a pattern,
lm-eval's group records, scales outside [0, 1])."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hakari.cli import app
from tests.helpers.cli import assert_one_line, runner, succeed
from tests.helpers.imports import imported, write_jsonl
from tests.helpers.paths import FIXTURES

LM_EVAL = FIXTURES / "interop" / "lm_eval"


def _import(path: Path, out: Path, *extra: str, source: str = "table") -> dict:
    imported(source, path, out, *extra)
    return json.loads((out / "results.json").read_text())


def _templates(results: dict, model: str, task: str) -> dict:
    decodings = results["models"][model]["tasks"][task]["decodings"]
    return next(iter(decodings.values()))["templates"]


@pytest.mark.parametrize(("answer", "gold"), [(1, "1"), ("1", 1), (1.0, "1"), (1, 1.0)])
def test_a_number_answer_matches_a_text_gold(tmp_path: Path, answer: object, gold: object) -> None:
    """Item 4: JSON Lines keep types; answers and golds are compared as labels (text)."""
    rows = [
        {"model": "m", "task": "x", "template": t, "item": i, "answer": answer, "gold": gold}
        for t in ("t0", "t1")
        for i in range(4)
    ]
    results = _import(
        write_jsonl(tmp_path / "t.jsonl", rows), tmp_path / "run", "--metric", "accuracy"
    )
    for template in _templates(results, "m", "x").values():
        assert template["metrics"]["accuracy"] == 1.0


def test_a_list_gold_for_accuracy_is_refused_in_one_line(tmp_path: Path) -> None:
    """Item 4: a list of golds made accuracy raise a TypeError traceback (unhashable)."""
    rows = [
        {"model": "m", "task": "x", "template": t, "item": i, "answer": "1", "gold": ["1", "one"]}
        for t in ("t0", "t1")
        for i in range(4)
    ]
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    result = runner.invoke(
        app,
        ["import", "table", str(path), "--output", str(tmp_path / "run"), "--metric", "accuracy"],
    )
    assert_one_line(
        result.exit_code, result.output, "t.jsonl", "line 1", "field gold", "exact_match"
    )


def _subject_logs(tmp_path: Path) -> Path:
    """lm-eval logs of two MMLU-like subjects, two prompt variants each."""
    logs = tmp_path / "logs"
    shutil.copytree(LM_EVAL, logs)
    names = {"p0": "psychology_p0", "p1": "psychology_p1", "p2": "physics_p0"}
    for path in list(logs.rglob("samples_demo_mc_p*.jsonl")):
        variant = path.name.split("_")[3]
        target = path.with_name(
            path.name.replace(f"demo_mc_{variant}", f"mmlu_high_school_{names[variant]}")
        )
        path.rename(target)
        if variant == "p2":
            shutil.copy(target, target.with_name(target.name.replace("physics_p0", "physics_p1")))
    return logs


def test_a_pattern_never_splits_a_subject_name(tmp_path: Path) -> None:
    """Item 2: `{task}_p{template}` read `mmlu_high_school_psychology_p0` as task
    `mmlu_high_school`, template `sychology_p0`: the two subjects merged into one task."""
    out = tmp_path / "run"
    result = succeed(
        [
            "import",
            "lm-eval",
            str(_subject_logs(tmp_path)),
            "--templates",
            "{task}_p{template}",
            "--output",
            str(out),
            "--n-boot",
            "0",
        ]
    )
    results = json.loads((out / "results.json").read_text())
    model = next(iter(results["models"].values()))
    assert set(model["tasks"]) == {"mmlu_high_school_psychology", "mmlu_high_school_physics"}
    for task in model["tasks"].values():
        assert set(next(iter(task["decodings"].values()))["templates"]) == {"0", "1"}
    assert "read by the shortest template" in " ".join(result.output.split())  # said


def test_lm_evals_group_record_in_eee_is_no_template(tmp_path: Path) -> None:
    """Item 3: with --task and no --templates, the converter's group record (a copy of
    one template's instances under the group's name) was read as a fourth template."""
    eee = FIXTURES / "producers" / "eee" / "lm-eval"
    result = succeed(
        [
            "import",
            "eee",
            str(eee),
            "--task",
            "demo_sentiment_en",
            "--output",
            str(tmp_path / "run"),
            "--n-boot",
            "0",
        ]
    )
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    task = next(iter(results["models"].values()))["tasks"]["demo_sentiment_en"]
    dec = next(iter(task["decodings"].values()))
    names = [f"demo_sentiment_en_{t}" for t in ("0-1", "0-2", "1-2")]
    assert sorted(dec["templates"]) == names
    assert dec["aggregate"]["acc"]["mean"] == pytest.approx(0.4583333333, abs=1e-9)
    assert dec["aggregate"]["acc"]["std"] == pytest.approx(0.0589255651, abs=1e-9)
    assert "copy of" in " ".join(result.output.split())


def _two_models(scale: float) -> list[dict]:
    """Model A: templates 0.7 and 0.5 (mean 0.6, std 0.1); model B: 0.5 and 0.5."""
    per_template = {"A": (0.7, 0.5), "B": (0.5, 0.5)}
    return [
        {"model": m, "task": "x", "template": f"t{k}", "item": i, "score": scale * value}
        for m, values in per_template.items()
        for k, value in enumerate(values)
        for i in range(4)
    ]


def _sharpe(results: dict) -> dict[str, float]:
    return {
        m: next(iter(r["tasks"]["x"]["decodings"].values()))["aggregate"]["score"]["sharpe"]
        for m, r in results["models"].items()
    }


def test_scores_outside_zero_one_are_refused_without_a_declared_range(tmp_path: Path) -> None:
    """Item 1: as fractions A wins (Sharpe 0.545 against 0.500), as percentages B won
    (50.0 against 5.455) by scale alone. Percentages are refused until their range is said."""
    path = write_jsonl(tmp_path / "pct.jsonl", _two_models(100.0))
    result = runner.invoke(app, ["import", "table", str(path), "--output", str(tmp_path / "r")])
    assert_one_line(result.exit_code, result.output, "pct.jsonl", "line 1", "--score-range")
    assert not (tmp_path / "r").exists()


def test_a_declared_range_gives_the_fractions_statistics(tmp_path: Path) -> None:
    """Item 1: --score-range 0:100 rescales to [0, 1]: the Sharpe scores (and the ranking)
    are the fractions' exactly, the range is recorded and the report says it."""
    fractions = _import(write_jsonl(tmp_path / "f.jsonl", _two_models(1.0)), tmp_path / "f")
    pct = _import(
        write_jsonl(tmp_path / "p.jsonl", _two_models(100.0)),
        tmp_path / "p",
        "--score-range",
        "0:100",
    )
    assert _sharpe(pct) == pytest.approx(_sharpe(fractions), abs=1e-12)
    assert _sharpe(pct) == pytest.approx({"A": 0.6 / 1.1, "B": 0.5}, abs=1e-12)
    assert pct["imported"]["options"]["score_range"] == [0.0, 100.0]
    report = " ".join(succeed(["report", str(tmp_path / "p"), "--markdown"]).output.split())
    assert r"rescaled from \[0, 100\] to \[0, 1\]" in report  # Markdown-escaped
    for bad in ("100:0", "0-100", "0:inf"):
        result = runner.invoke(
            app,
            [
                "import",
                "table",
                str(tmp_path / "p.jsonl"),
                "--output",
                str(tmp_path / "q"),
                "--score-range",
                bad,
            ],
        )
        assert_one_line(result.exit_code, result.output, "field --score-range")


def test_huge_scores_are_refused_at_their_line(tmp_path: Path) -> None:
    """Item 21: scores of 1e308 gave four numpy RuntimeWarnings, then an error blaming
    --metric that named no file or line; a range whose width overflows is refused too."""
    rows = [
        {"model": "m", "task": "x", "template": f"t{t}", "item": i, "score": 1e308 * (i % 2)}
        for t in range(2)
        for i in range(4)
    ]
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    result = runner.invoke(app, ["import", "table", str(path), "--output", str(tmp_path / "r")])
    assert_one_line(result.exit_code, result.output, "big.jsonl", "line 2", "field score")
    result = runner.invoke(
        app,
        [
            "import",
            "table",
            str(path),
            "--output",
            str(tmp_path / "r"),
            "--score-range=-1e308:1e308",
        ],
    )
    assert_one_line(result.exit_code, result.output, "field --score-range")


def test_an_lm_eval_model_without_its_results_file_keeps_its_name_and_decoding(
    tmp_path: Path,
) -> None:
    """Item 14: without results_*.json the model was named after its folder
    (`HuggingFaceTB__SmolLM2-135M-Instruct`) and its loglik task labelled `generate`:
    two models under two spellings, never compared."""
    logs = tmp_path / "logs"
    shutil.copytree(LM_EVAL, logs)
    with_results = _import(logs, tmp_path / "a", "--group", "demo_mc", source="lm-eval")
    for path in logs.rglob("results_*.json"):
        path.unlink()
    bare = _import(logs, tmp_path / "b", "--task", "demo_mc", source="lm-eval")
    assert sorted(bare["models"]) == sorted(with_results["models"])
    for model in bare["models"].values():
        assert list(model["tasks"]["demo_mc"]["decodings"]) == ["loglik"]

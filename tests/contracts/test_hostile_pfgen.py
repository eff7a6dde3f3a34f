"""Hostile outputs of `hakari pfgen`: `score --json` and `leaderboard --html` never write
over what they read, a full device is one `error:` line (exit 2) and stays a device,
`build-reference` never writes into its own data folder, all before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from tests.helpers.cli import assert_one_line
from tests.helpers.outputs import full_device, is_char_device, snapshot

runner = CliRunner()
QUESTIONS = {"Q01": ("富士山の高さは？", "3776"), "Q02": ("日本の首都は？", "東京")}


def data_folder(folder: Path) -> Path:
    """Two pfgen-bench questions with a few reference answers each."""
    folder.mkdir(parents=True)
    for qid, (question, keyword) in QUESTIONS.items():
        answers = {"P": [f"{keyword}です。", f"答えは{keyword}。", f"{keyword}でしょう。"]}
        data = {"question_id": qid, "question": question, "category": "test", "note": "",
                "keywords": [{"t": keyword}], "answers": answers}  # fmt: skip
        (folder / f"{qid}.json").write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    examples = [{"question": q, "answer": f"{k}です。"} for q, k in QUESTIONS.values()]
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples), "utf-8"
    )
    return folder


def trials_file(path: Path, trials: int = 1) -> Path:
    rows = [{"question": q, "answer": f"答えは{k}です。", "timestamp": f"2025-01-01T00:0{t}:0{i}"}
            for t in range(trials) for i, (q, k) in enumerate(QUESTIONS.values())]  # fmt: skip
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


@pytest.fixture
def no_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("n-gram tables were built before the output was checked")

    monkeypatch.setattr("hakari.pfgen.tables.open_tables", refuse)


def pfgen(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["pfgen", *args])
    return result.exit_code, result.output


def test_score_json_over_its_trials_is_refused(tmp_path: Path, no_tables: None) -> None:
    data, trials = data_folder(tmp_path / "data"), trials_file(tmp_path / "trials.jsonl")
    before = trials.read_bytes()
    code, out = pfgen("score", str(trials), "--data-dir", str(data), "--json", str(trials))
    assert_one_line(code, out, "--json", "trials.jsonl", "input")
    assert trials.read_bytes() == before


def test_score_json_to_a_full_device(tmp_path: Path) -> None:
    data, trials = data_folder(tmp_path / "data"), trials_file(tmp_path / "trials.jsonl")
    device = full_device(tmp_path)
    args = ["score", str(trials), "--data-dir", str(data), "--cache-dir", str(tmp_path / "c")]
    code, out = pfgen(*args, "--bootstrap", "10", "--json", str(device))
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in out, out
    assert "--json" in errors[0] and "No space left on device" in errors[0]
    assert is_char_device(device)


def test_build_reference_into_its_own_data_folder_is_refused(
    tmp_path: Path, no_tables: None
) -> None:
    data, trials = data_folder(tmp_path / "data"), trials_file(tmp_path / "t.jsonl", 4)
    before = snapshot(data)
    code, out = pfgen(
        "build-reference", str(trials), "--data-dir", str(data), "--output-dir", str(data),
        "--k", "1", "--pool", "2",
    )  # fmt: skip
    assert_one_line(code, out, "--output-dir", "input")
    assert snapshot(data) == before


def test_build_reference_output_that_is_a_file_is_refused_first(
    tmp_path: Path, no_tables: None
) -> None:
    data, trials = data_folder(tmp_path / "data"), trials_file(tmp_path / "trials.jsonl")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, out = pfgen(
        "build-reference", str(trials), "--data-dir", str(data), "--output-dir", str(blocker)
    )
    assert_one_line(code, out, "--output-dir", "not a folder")


def test_leaderboard_html_over_an_input_is_refused(tmp_path: Path, no_tables: None) -> None:
    results = tmp_path / "results"
    results.mkdir()
    summary = results / "summary.json"
    numbers = dict.fromkeys(("score", "score_std", "fluency", "truthfulness", "helpfulness"), 0.5)
    entry = {"model": "m", "num_trials": 10, "length": 100.0, "uncertainty": {}, **numbers}
    summary.write_text(json.dumps(entry), encoding="utf-8")
    before = summary.read_bytes()
    code, out = pfgen("leaderboard", str(results), "--html", str(summary))
    assert_one_line(code, out, "--html", "summary.json", "input")
    assert summary.read_bytes() == before

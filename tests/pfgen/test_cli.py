"""The CLI: one clear error (exit 2) for bad input, --json contents, the leaderboard."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli.pfgen import app
from tests.helpers.pfgen_data import write_trials

runner = CliRunner()


def _rows(trials: int, answer: str = "富士山の高さは3776メートルです。") -> list[dict]:
    rows = []
    for t in range(trials):
        stamp = f"2025-01-01T00:00:{t:02d}"
        rows.append({"question": "富士山の高さは？", "answer": answer, "timestamp": stamp + ".1"})
        rows.append(
            {"question": "日本の首都は？", "answer": "東京です。", "timestamp": stamp + ".2"}
        )
    return rows


def _score(*args: str):
    return runner.invoke(app, ["score", *args])


def test_missing_data_dir_is_one_clear_error(tmp_path: Path):
    trials = write_trials(tmp_path / "t.jsonl", _rows(1))
    result = _score(str(trials), "--data-dir", str(tmp_path / "nope"), "--cache-dir", str(tmp_path))
    assert result.exit_code == 2
    assert "does not exist" in result.output and "Traceback" not in result.output


def test_no_data_at_all_points_to_fetch_data(tmp_path: Path):
    trials = write_trials(tmp_path / "t.jsonl", _rows(1))
    result = _score(str(trials), "--cache-dir", str(tmp_path / "empty-cache"))
    assert result.exit_code == 2 and "fetch-data" in result.output


def test_malformed_trials_line(small_data: Path, tmp_path: Path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_rows(1)[0], ensure_ascii=False) + "\n{not json\n", "utf-8")
    result = _score(str(path), "--data-dir", str(small_data), "--cache-dir", str(tmp_path))
    assert result.exit_code == 2 and "line 2" in result.output and "t.jsonl" in result.output


def test_answer_must_be_a_string(small_data: Path, tmp_path: Path):
    path = write_trials(tmp_path / "t.jsonl", [{"question": "日本の首都は？", "answer": None}])
    result = _score(str(path), "--data-dir", str(small_data), "--cache-dir", str(tmp_path))
    assert result.exit_code == 2 and "answer" in result.output


def test_unknown_question(small_data: Path, tmp_path: Path):
    rows = [*_rows(1), {"question": "月の高さは？", "answer": "高い", "timestamp": "x"}]
    path = write_trials(tmp_path / "t.jsonl", rows)
    result = _score(str(path), "--data-dir", str(small_data), "--cache-dir", str(tmp_path))
    assert result.exit_code == 2 and "月の高さは？" in result.output


def test_score_json_has_parity_and_honest_fields(small_data: Path, tmp_path: Path):
    rows = _rows(3) + _rows(1, answer="富士山は高い。")
    for i, row in enumerate(rows[6:]):
        row["timestamp"] = f"2025-01-01T00:01:0{i}"
    path = tmp_path / "run" / "trials.jsonl.xz"
    path.parent.mkdir()
    path.write_bytes(lzma.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    out = tmp_path / "out.json"
    result = _score(
        str(path), "--data-dir", str(small_data), "--cache-dir", str(tmp_path / "c"),
        "--json", str(out), "--bootstrap", "500",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # the first call builds the tables and says so (issue 26: 87 s of silence before)
    assert "building the n-gram tables of 2 questions" in result.output
    assert "n-gram tables built in" in result.output
    again = _score(
        str(path), "--data-dir", str(small_data), "--cache-dir", str(tmp_path / "c"),
        "--json", str(out), "--bootstrap", "500",
    )  # fmt: skip
    assert "building" not in again.output  # built once per data version
    summary = json.loads(out.read_text(encoding="utf-8"))
    for key in ("score", "score_std", "fluency", "truthfulness", "helpfulness", "length"):
        assert isinstance(summary[key], float)
    assert summary["num_trials"] == 4 and set(summary["questions"]) == {"Q01", "Q02"}
    q01 = summary["questions"]["Q01"]
    assert q01["spread"]["n"] == 4 and len(q01["samples"]) == 4
    u = summary["uncertainty"]
    assert u["trials_identified"] and u["num_trials"] == 4
    assert u["ci_low"] <= u["trial_mean"] <= u["ci_high"]
    assert "pseudo-trial" in summary["score_std_kind"]


def _result_dir(root: Path, name: str, temperature: float, trials: int) -> None:
    folder = root / "result" / name / "abc1234"
    config = {"model": name, "mode": "qa", "temperature": temperature}
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config), "utf-8")
    write_trials(folder / "trials.jsonl", _rows(trials))
    (folder / "result.json").write_text("{}", "utf-8")  # rescored: trials are present


def test_leaderboard_flags_temperature_and_trial_count(small_data: Path, tmp_path: Path):
    root = tmp_path / "runs"
    _result_dir(root, "a", 1.0, 3)
    _result_dir(root, "b", 1.0, 3)
    _result_dir(root, "c", 0.0, 1)
    result = runner.invoke(
        app,
        ["leaderboard", str(root), "--data-dir", str(small_data), "--cache-dir", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    line_c = next(line for line in result.output.splitlines() if " c " in line)
    assert "T=0.0" in line_c and "1 trials" in line_c
    line_a = next(line for line in result.output.splitlines() if " a " in line)
    assert "T=" not in line_a


@pytest.mark.slow
def test_leaderboard_of_published_results(shared_pfgen: Path, shared_tables, tmp_path: Path):
    cache = shared_tables.directory.parents[2]
    result = runner.invoke(
        app,
        ["leaderboard", str(shared_pfgen / "result"), "--data-dir", str(shared_pfgen),
         "--cache-dir", str(cache), "--bootstrap", "200"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "│" in line]
    assert "claude-opus-4" in lines[0] and "0.9581" in lines[0]  # rank 1
    gpt4o = next(line for line in lines if "gpt-4o" in line)
    assert "T=0.0" in gpt4o and "10 trials" in gpt4o

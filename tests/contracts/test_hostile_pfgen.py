"""Hostile input to `hakari pfgen` (score, build-reference): each case ends with one
line naming the file and field (exit code 2), in bounded time."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from hakari.cli import app
from hakari.pfgen.helpfulness import score_helpfulness
from hakari.pfgen.reference_build import drop_ng
from tests.helpers.cli import assert_one_line
from tests.helpers.deadline import within_deadline

EVIL = "a" * 46 + "!"  # with (a+)+$, Python's re backtracks for ever


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["pfgen", *args])
    return result.exit_code, result.output


def _data_dir(tmp_path: Path, rule: dict) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    question = {
        "question_id": "Q01",
        "question": "富士山の高さは？",
        "keywords": [rule],
        "answers": {"A": ["3776メートルです。"]},
    }
    (data / "Q01.json").write_text(json.dumps(question, ensure_ascii=False), encoding="utf-8")
    return data


def test_score_refuses_a_keyword_regex_the_matcher_cannot_take(tmp_path: Path) -> None:
    """Checked when the question files are read (the tables of one question are tiny)."""
    data = _data_dir(tmp_path, {"t": "(?<=高さ)3776"})
    trials = tmp_path / "trials.jsonl"
    trials.write_text(json.dumps({"question": "富士山の高さは？", "answer": "3776"}) + "\n")
    cache = str(tmp_path / "cache")
    code, out = _invoke("score", str(trials), "--data-dir", str(data), "--cache-dir", cache)
    assert_one_line(code, out, "Q01.json", "keywords", "look-behind")


def test_keyword_rules_run_in_linear_time() -> None:
    """A rule `(a+)+$` against an answer of 46 `a`s and `!` (the reference scorer's
    window is 200 characters: still 2^46 paths for Python's re)."""
    value, failed = within_deadline(lambda: score_helpfulness(EVIL, [{"t": "(a+)+$"}]))
    assert value == 0.0 and failed[0][0] == "(a+)+$"


def test_build_reference_refuses_an_ng_regex_the_matcher_cannot_take(tmp_path: Path) -> None:
    data = _data_dir(tmp_path, {"t": "3776"})
    ng = tmp_path / "ng.json"
    ng.write_text(json.dumps({"*": ["(?!x)y"]}), encoding="utf-8")
    trials = tmp_path / "trials.jsonl"
    trials.write_text(json.dumps({"question": "富士山の高さは？", "answer": "3776"}) + "\n")
    code, out = _invoke(
        "build-reference",
        str(trials),
        "--data-dir",
        str(data),
        "--output-dir",
        str(tmp_path / "out"),
        "--ng-rules",
        str(ng),
    )
    assert_one_line(code, out, "ng.json", "look-ahead")


def test_ng_rules_run_in_linear_time() -> None:
    kept = within_deadline(lambda: drop_ng([EVIL, "ok"], ["(a+)+$", "ok$"]))
    assert kept == [EVIL]

"""Hostile input to `hakari score` (judges over a run or a file): each case ends with one
line naming the file and field (exit code 2) before any model loads, or in bounded time.

`no_model_loads` replaces the model loader with one that fails the test if called."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from hakari.cli import app
from hakari.judges.prompts import builtin_prompts, load_prompt
from tests.helpers.cli import assert_one_line
from tests.helpers.deadline import within_deadline

EVIL = "<" * 46 + "!"  # with (<+)+$, Python's re backtracks for ever


def _judge_prompt(tmp_path: Path, delimiter: str) -> Path:
    data = yaml.safe_load(builtin_prompts()["single_1to10"].read_text(encoding="utf-8"))
    data["delimiters"] = [delimiter]
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def test_judge_delimiter_the_matcher_cannot_take(tmp_path: Path, no_model_loads: list[str]) -> None:
    prompt = _judge_prompt(tmp_path, "<(?!/)response>")
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"prompt": "p", "prediction": "x"}) + "\n", encoding="utf-8")
    args = ["score", "--input", str(rows), "--output", str(tmp_path / "out.jsonl")]
    args += ["--judge", "fake:Rating: [[5]]", "--judge-prompt", str(prompt)]
    args += ["--prompt-field", "prompt", "--no-cache"]
    result = CliRunner().invoke(app, args)
    assert_one_line(result.exit_code, result.output, "mine.yaml", "look-ahead")
    assert not no_model_loads


def test_judge_delimiters_neutralise_in_linear_time(tmp_path: Path) -> None:
    """Every value put into a judge prompt (a model's answer) is searched for the prompt's
    delimiters: `(<+)+$` against 46 `<` and `!` used to hang."""
    prompt = load_prompt(str(_judge_prompt(tmp_path, "(<+)+$")))
    assert within_deadline(lambda: prompt.neutralise(EVIL)) == EVIL
    assert prompt.neutralise("<<<") == "‹‹‹"

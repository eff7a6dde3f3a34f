"""Hostile input to `hakari tasks` (export, show): each case ends with one line naming
the file, template, row or field (exit code 2), in bounded time; no model is involved."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from hakari.cli import app
from tests.helpers.cli import assert_one_line
from tests.helpers.deadline import within_deadline

runner = CliRunner()
EVIL = "a" * 46 + "!"  # with (a+)+$, Python's re backtracks for ever


def _text_task(tmp_path: Path, regex: str, gold: str) -> Path:
    task = {
        "name": "qa_hostile",
        "language": "en",
        "target": "answer",
        "answer_type": "text",
        "fallback": {"kind": "text"},
        "metrics": ["exact_match"],
        "templates": [{"id": "0-0", "prompt": "Q: {q}\nA:", "regex": regex}],
        "data": {
            "splits": {
                "validation": {"file": "data.jsonl"},
                "train": {"file": "data.jsonl"},
            }
        },
    }
    (tmp_path / "data.jsonl").write_text(json.dumps({"q": "x?", "answer": gold}) + "\n")
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task), encoding="utf-8")
    return path


def _invoke(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def test_export_target_check_of_a_catastrophic_regex(tmp_path: Path) -> None:
    """Every exported target must fullmatch its template's regex: `(a+)+$` against a gold
    of 46 `a`s and `!` used to hang there (issue 17 §1)."""
    path = _text_task(tmp_path, "(a+)+$", EVIL)
    args = ["tasks", "export", str(path), "--output", str(tmp_path / "out.jsonl")]
    code, out = within_deadline(lambda: _invoke(args))
    assert_one_line(code, out, "template 0-0", "regex", "cannot be written")


def test_export_refuses_a_regex_the_matcher_cannot_take(tmp_path: Path) -> None:
    path = _text_task(tmp_path, "(?<=Q)[a-z]+", "abc")
    args = ["tasks", "export", str(path), "--output", str(tmp_path / "out.jsonl")]
    assert_one_line(*_invoke(args), "task.yaml", "template 0-0", "look-behind")

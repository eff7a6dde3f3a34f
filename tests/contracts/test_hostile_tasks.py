"""Hostile outputs of `hakari tasks`: `export` never writes over the task file or data
it reads, writes through a symbolic link and to standard output; `list --json` to a
full standard output is one `error:` line (exit 2), not a traceback.

Hostile input to `hakari tasks list|show|export`: a terminal that cannot show every
character still gets the output (non-ASCII escaped), never a traceback; bad task files
are one `error:` line naming the file and field (exit code 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import hakari
from hakari.cli import app
from tests.helpers.cli import assert_one_line
from tests.helpers.deadline import within_deadline
from tests.helpers.outputs import hakari_process, open_full_stdout, stderr_lines, stdout_link
from tests.helpers.tasks import GOOD, mutate

runner = CliRunner()


def task_with_data(folder: Path) -> Path:
    task = json.loads(json.dumps(GOOD))
    task["data"] = {
        "splits": {"train": {"file": "train.jsonl", "format": "jsonl"}},
        "eval_split": "train",
    }
    path = folder / "bom.yaml"
    path.write_text(yaml.safe_dump(task), encoding="utf-8")
    rows = [{"question": f"q{i}", "label": "yes" if i % 2 else "no"} for i in range(4)]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def export(task: Path, output: Path | str) -> tuple[int, str]:
    result = runner.invoke(app, ["tasks", "export", str(task), "--output", str(output)])
    return result.exit_code, result.output


def test_export_over_its_own_task_file_is_refused(tmp_path: Path) -> None:
    task = task_with_data(tmp_path)
    before = task.read_bytes()
    assert_one_line(*export(task, task), "--output", "bom.yaml", "input")
    assert task.read_bytes() == before


def test_export_over_the_tasks_data_file_is_refused(tmp_path: Path) -> None:
    task = task_with_data(tmp_path)
    data = tmp_path / "train.jsonl"
    before = data.read_bytes()
    assert_one_line(*export(task, data), "--output", "train.jsonl", "input")
    assert data.read_bytes() == before


def test_export_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    task = task_with_data(tmp_path)
    link = tmp_path / "latest.jsonl"
    link.symlink_to("exports/train-v1.jsonl")
    (tmp_path / "exports").mkdir()
    code, out = export(task, link)
    assert code == 0, out
    assert link.is_symlink()
    rows = (tmp_path / "exports" / "train-v1.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 8 and json.loads(rows[0])["task"] == "tiny"


def test_export_to_standard_output_through_a_link(tmp_path: Path) -> None:
    task = task_with_data(tmp_path)
    link = stdout_link(tmp_path)
    result = hakari_process("tasks", "export", str(task), "--output", str(link))
    assert result.returncode == 0, result.stderr
    assert sum(line.startswith('{"task": "tiny"') for line in result.stdout.splitlines()) == 8
    assert link.is_symlink()


def test_list_json_to_a_full_standard_output() -> None:
    with open_full_stdout() as full:
        result = hakari_process("tasks", "list", "--json", stdout=full)
    lines = stderr_lines(result)
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "No space left on device" in lines[0]


HAKARI_SRC = str(Path(hakari.__file__).resolve().parents[1])  # the code under test


def hakari_ascii(*args: str) -> subprocess.CompletedProcess[str]:
    """`hakari ARGS` in a process whose stdout and stderr are ASCII-only."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": HAKARI_SRC}
    return subprocess.run(
        [sys.executable, "-m", "hakari", *args],
        capture_output=True,
        text=True,
        encoding="ascii",
        errors="strict",
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args", [["tasks", "show", "demo_sentiment_ja"], ["tasks", "list"]], ids=["show", "list"]
)
def test_an_ascii_terminal_gets_escaped_text(args: list[str]) -> None:
    done = hakari_ascii(*args)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "demo_sentiment_ja" in done.stdout
    if args[1] == "show":
        assert "\\u" in done.stdout  # the Japanese templates, escaped


def test_an_ascii_terminal_gets_errors_as_one_line(tmp_path: Path) -> None:
    path = tmp_path / "t\u00e9.yaml"
    path.write_text(yaml.safe_dump(mutate(name="Bad Name")), encoding="utf-8")
    done = hakari_ascii("tasks", "show", str(path))
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "t\\xe9.yaml" in lines[0]


def test_a_prompt_with_a_format_spec_is_refused_when_shown(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(
        yaml.safe_dump(mutate(templates__0__prompt="Q: {question:>2000000000}")), "utf-8"
    )
    result = runner.invoke(app, ["tasks", "show", str(path)])
    assert_one_line(result.exit_code, result.output, "task.yaml", "{question:>2000000000}")


# --- issue 17 §1: template regexes in tasks export run in linear time ----------

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

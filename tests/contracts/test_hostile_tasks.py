"""Hostile input to `hakari tasks list|show|export`: a terminal that cannot show every
character still gets the output (non-ASCII escaped), never a traceback; bad task files
are one `error:` line naming the file and field (exit code 2)."""

from __future__ import annotations

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
from tests.helpers.tasks import mutate

runner = CliRunner()
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

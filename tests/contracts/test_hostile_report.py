"""Hostile input to `hakari report`: every input it accepts is shown (a meta-evaluation
file too), on any terminal; what it cannot read is one `error:` line naming the file
(exit code 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hakari
from hakari.cli import app
from hakari.meta import BootstrapSettings, load_meta_input, meta_evaluate
from tests.helpers.runs import fake_run

runner = CliRunner()
HAKARI_SRC = str(Path(hakari.__file__).resolve().parents[1])  # the code under test


@pytest.fixture
def meta_json(tmp_path: Path) -> Path:
    rows = tmp_path / "scores.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"h": h, "rouge[b]": m, "s": s, "g": g}) + "\n"
            for h, m, s, g in [(1, 0.2, "a", "x"), (2, 0.4, "b", "x"), (3, 0.3, "a", "y"),
                               (4, 0.9, "b", "y"), (2, 0.5, "c", "x"), (5, 0.8, "c", "y")]
        ),
        encoding="utf-8",
    )  # fmt: skip
    data = load_meta_input(rows, "h", ["rouge[b]"], "s", "g")
    path = tmp_path / "meta.json"
    path.write_text(json.dumps(meta_evaluate(data, BootstrapSettings(n_boot=50))), "utf-8")
    return path


@pytest.mark.parametrize("markdown", [False, True], ids=["terminal", "markdown"])
def test_a_meta_file_is_shown(meta_json: Path, markdown: bool) -> None:
    """`hakari report meta.json` printed nothing at all (exit 0)."""
    args = ["report", str(meta_json), *(["--markdown"] if markdown else [])]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    metric = "rouge\\[b\\]" if markdown else "rouge[b]"  # Markdown escapes the brackets
    for needle in ("meta.json", "pooled", "system", "summary", metric, "pearson", "CAT"):
        assert needle in result.output, (needle, result.output)
    if markdown:
        assert "| metric |" in result.output


def test_an_ascii_terminal_gets_the_report(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "run")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": HAKARI_SRC}
    done = subprocess.run(
        [sys.executable, "-m", "hakari", "report", str(run)],
        capture_output=True,
        text=True,
        encoding="ascii",
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "demo_sentiment_en" in done.stdout

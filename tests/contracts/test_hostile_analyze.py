"""Hostile conditions for `hakari analyze RUN`: it writes into a run folder, so it holds
the folder's lock, and a folder another command is writing is one `error:` line (exit 2)
before any model loads."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from hakari.cli import app
from tests.helpers.cli import assert_one_line
from tests.helpers.outputs import finished_run, run_in_flight


def test_analyze_while_a_run_writes_the_folder_is_refused(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    run = finished_run(tmp_path / "run")
    with run_in_flight(run, tmp_path / "cache"):
        result = CliRunner().invoke(app, ["analyze", str(run), "--judge", "fake:x"])
        assert_one_line(result.exit_code, result.output, str(run), "another hakari command")
    assert not no_model_loads
    assert not (run / "analysis.json").exists()

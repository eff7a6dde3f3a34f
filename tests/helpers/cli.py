"""Driving the CLI in tests: `hakari run` with test defaults, and the one-line error check
every hostile-input case makes."""

from __future__ import annotations

from pathlib import Path

from click.testing import Result
from typer.testing import CliRunner

from hakari.cli import app

runner = CliRunner()


def invoke(*args: str, cache: Path | None = None) -> tuple[int, str]:
    extra = ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
    # defaults first: the options of a case come last, and the last one given wins
    result = runner.invoke(app, ["run", "--n-boot", "0", *extra, *args])
    return result.exit_code, result.output


def succeed(args: list[str]) -> Result:
    """Any command of the app, in process; it must exit 0 (its output is the message)."""
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result


def assert_one_line(code: int, out: str, *needles: str) -> None:
    assert code == 2, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    assert "Traceback" not in out
    for needle in needles:
        assert needle in lines[0], (needle, out)

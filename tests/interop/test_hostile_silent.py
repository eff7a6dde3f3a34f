"""Hostile round five (issue 43), silent acceptances: each case is refused in one line
(file, line, field; exit 2; nothing written) or read with a note in the output and in
results.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hakari.cli import app
from tests.helpers.cli import assert_one_line, runner, succeed


def _csv(path: Path, rows: list[tuple]) -> Path:
    body = "".join(",".join(str(c) for c in row) + "\n" for row in rows)
    path.write_text("model,task,template,item,score\n" + body, encoding="utf-8")
    return path


def _grid(score: str = "1") -> list[tuple]:
    return [
        ("m", "x", f"t{t}", i, score if (t, i) == (1, 2) else i % 2)
        for t in range(2)
        for i in range(4)
    ]


def _refused(tmp_path: Path, path: Path, *needles: str, extra: tuple[str, ...] = ()) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["import", "table", str(path), "--output", str(out), *extra])
    assert_one_line(result.exit_code, result.output, *needles)
    assert not out.exists(), "something was written"


@pytest.mark.parametrize("score", ["1_0", "\u0663", "\uff11", "1\u00a0"])
def test_numbers_only_python_reads_are_refused(tmp_path: Path, score: str) -> None:
    """Item 8: `float()` reads `1_0` as 10, Arabic-Indic ٣ as 3, fullwidth １ as 1."""
    path = _csv(tmp_path / "t.csv", _grid(score))
    _refused(tmp_path, path, "t.csv", "line 8", "field score", "plain ASCII decimals")

"""Hostile outputs and inputs of `hakari meta`: `--json` never replaces its own input,
goes to a device in place (a full one is one line, the device stays), is refused before
the work when it is a folder; an input that never ends is read with a bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from tests.helpers.cli import assert_one_line
from tests.helpers.outputs import full_device, hakari_process, is_char_device, stderr_lines

runner = CliRunner()


@pytest.fixture
def scores(tmp_path: Path) -> Path:
    path = tmp_path / "scores.jsonl"
    pairs = [(1, 0.2), (2, 0.4), (3, 0.3), (4, 0.9), (2, 0.5)]
    rows = [{"h": h, "m": m} for h, m in pairs]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def meta(scores: Path, *args: str) -> tuple[int, str]:
    base = ["meta", "--input", str(scores), "--human", "h", "--metrics", "m", "--n-boot", "20"]
    result = runner.invoke(app, [*base, *args])
    return result.exit_code, result.output


def test_json_over_its_input_is_refused(scores: Path) -> None:
    before = scores.read_bytes()
    assert_one_line(*meta(scores, "--json", str(scores)), "--json", "input")
    assert scores.read_bytes() == before


def test_json_that_is_a_folder_is_refused_before_the_tables(scores: Path) -> None:
    """One line and nothing else: the tables are not printed first."""
    assert_one_line(*meta(scores, "--json", str(scores.parent)), "--json", "folder")


def test_json_to_a_full_device(scores: Path, tmp_path: Path) -> None:
    device = full_device(tmp_path)
    code, out = meta(scores, "--json", str(device))
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in out, out
    assert "--json" in errors[0] and "No space left on device" in errors[0]
    assert is_char_device(device)


def test_json_to_a_full_disk_leaves_no_file(
    scores: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC on a regular file: one line, no half-written file, no temporary file."""
    import errno
    import os

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, out = meta(scores, "--json", str(out_dir / "meta.json"))
    assert code == 2 and "No space left on device" in out and "Traceback" not in out, out
    assert list(out_dir.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_input_linked_to_dev_zero_is_read_with_a_bound(tmp_path: Path) -> None:
    zero = tmp_path / "rows.jsonl"
    zero.symlink_to("/dev/zero")
    result = hakari_process("meta", "--input", str(zero), "--human", "h", "--metrics", "m")
    lines = stderr_lines(result)
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert "rows.jsonl" in lines[0] and "line 1" in lines[0]

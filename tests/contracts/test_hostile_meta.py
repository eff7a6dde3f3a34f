"""Hostile outputs and inputs of `hakari meta`: `--json` never replaces its own input,
goes to a device in place (a full one is one line, the device stays), is refused before
the work when it is a folder; an input that never ends is read with a bound.

Hostile input to `hakari meta` (and `hakari.meta_evaluate`): each bad option or value is
one `error:` line naming the option, file or line (exit code 2) before any statistic is
computed, and no printed coefficient lies outside its own interval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from hakari.errors import HakariInputError
from hakari.meta import BootstrapSettings, MetaInput, load_meta_input, meta_evaluate
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


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_input_linked_to_dev_zero_is_refused_at_its_open(tmp_path: Path) -> None:
    zero = tmp_path / "rows.jsonl"
    zero.symlink_to("/dev/zero")
    result = hakari_process("meta", "--input", str(zero), "--human", "h", "--metrics", "m")
    lines = stderr_lines(result)
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert "rows.jsonl" in lines[0] and "not a regular file (a device)" in lines[0]


def meta_file(tmp_path: Path, metric: list[float | str | None] | None = None) -> Path:
    values = metric or [0.5, 0.7, 0.2, 0.9, 0.4, 0.8]
    path = tmp_path / "scores.jsonl"
    # written by hand, not json.dumps: a literal such as 1e309 must reach the reader
    lines = [
        f'{{"h": {i + 1}, "m": {"null" if v is None else v}, "s": "{"ab"[i % 2]}"}}'
        for i, v in enumerate(values)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def meta_of(path: Path, *extra: str) -> tuple[int, str]:
    args = ["meta", "--input", str(path), "--human", "h", "--metrics", "m", *extra]
    result = runner.invoke(app, args)
    return result.exit_code, result.output


# option values that broke the bootstrap (a traceback, or 1.46 TiB asked of numpy)
OPTION_CASES = {
    "n-boot-beyond-memory": (["--n-boot", "1000000000"], ["--n-boot", "memory"]),
    "seed-negative": (["--seed", "-5"], ["--seed", "-5"]),
}


@pytest.mark.parametrize("case", sorted(OPTION_CASES))
def test_bad_options_are_one_line_before_any_statistic(tmp_path: Path, case: str) -> None:
    args, needles = OPTION_CASES[case]
    assert_one_line(*meta_of(meta_file(tmp_path), *args), *needles)


def test_json_output_that_is_a_folder_fails_before_the_tables(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    assert_one_line(*meta_of(meta_file(tmp_path), "--json", str(folder)), "--json", "folder")


def test_json_output_in_a_missing_folder_that_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, out = meta_of(meta_file(tmp_path), "--json", str(blocker / "meta.json"))
    assert_one_line(code, out, "--json", "a-file")


def test_an_infinite_score_is_an_error_not_a_missing_value(tmp_path: Path) -> None:
    """`1e309` parses as infinity: it names its line instead of being dropped as NaN."""
    path = meta_file(tmp_path, [0.5, 0.7, "1e309", 0.9, 0.4, 0.8])
    assert_one_line(*meta_of(path), "scores.jsonl", "line 3", "'m'", "finite")


def test_python_entry_point_checks_its_settings() -> None:
    data = MetaInput(Path("x.jsonl"), "h", [1.0, 2.0, 3.0], {"m": [0.1, 0.3, 0.2]}, None, None)
    for settings, option in [
        (BootstrapSettings(n_boot=-1), "--n-boot"),
        (BootstrapSettings(seed=-5), "--seed"),
        (BootstrapSettings(confidence=1.5), "--confidence"),
        (BootstrapSettings(confidence=float("nan")), "--confidence"),
        (BootstrapSettings(n_boot=10**12), "--n-boot"),
    ]:
        with pytest.raises(HakariInputError, match=option):
            meta_evaluate(data, settings)


HUMAN = [1, 3, 2, 5, 1, 4, 3, 4]
METRIC = [0.1, 0.5, 0.3, 0.8, 0.2, 0.9, 0.45, 0.6]


def _scaled(tmp_path: Path, scale: float) -> dict:
    path = tmp_path / f"scaled-{scale:g}.jsonl"
    rows = [json.dumps({"h": h, "m": v * scale}) for h, v in zip(HUMAN, METRIC, strict=True)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return meta_evaluate(load_meta_input(path, "h", ["m"]), BootstrapSettings(n_boot=300))


@pytest.mark.parametrize("scale", [1e150, 1e200, 1e300])
def test_every_coefficient_lies_inside_its_interval(tmp_path: Path, scale: float) -> None:
    """Huge but finite scores overflowed the bootstrap's sums (every replicate 0): the
    published Pearson then lay outside its own CI. Correlations do not depend on scale."""
    result = _scaled(tmp_path, scale)["levels"]["pooled"]["m"]
    plain = _scaled(tmp_path, 1.0)["levels"]["pooled"]["m"]
    for stat in ("pearson", "spearman", "kendall"):
        entry = result[stat]
        assert entry["ci_low"] <= entry["value"] <= entry["ci_high"], (stat, entry)
        assert entry["n_boot_undefined"] == 0
        for key in ("value", "ci_low", "ci_high"):
            assert entry[key] == pytest.approx(plain[stat][key]), (stat, key)

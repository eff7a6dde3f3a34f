"""Hostile input to `hakari meta` (and `hakari.meta_evaluate`): each bad option or value is
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

runner = CliRunner()


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


def meta(path: Path, *extra: str) -> tuple[int, str]:
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
    assert_one_line(*meta(meta_file(tmp_path), *args), *needles)


def test_json_output_that_is_a_folder_fails_before_the_tables(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    assert_one_line(*meta(meta_file(tmp_path), "--json", str(folder)), "--json", "folder")


def test_json_output_in_a_missing_folder_that_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, out = meta(meta_file(tmp_path), "--json", str(blocker / "meta.json"))
    assert_one_line(code, out, "--json", "a-file")


def test_an_infinite_score_is_an_error_not_a_missing_value(tmp_path: Path) -> None:
    """`1e309` parses as infinity: it names its line instead of being dropped as NaN."""
    path = meta_file(tmp_path, [0.5, 0.7, "1e309", 0.9, 0.4, 0.8])
    assert_one_line(*meta(path), "scores.jsonl", "line 3", "'m'", "finite")


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

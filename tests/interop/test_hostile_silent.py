"""Hostile round five (issue 43), silent acceptances: each case is refused in one line
(file, line, field; exit 2; nothing written) or read with a note in the output and in
results.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hakari.cli import app
from tests.helpers.cli import assert_one_line, runner, succeed
from tests.helpers.imports import import_rows, imported, write_jsonl


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


def test_nfc_and_nfd_spellings_are_one_template(tmp_path: Path) -> None:
    """Item 9: `café` composed and decomposed were two templates (and the paired
    comparison ran on one shared template)."""
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    rows = [
        {
            "model": m,
            "task": "x",
            "template": (nfc if m == "A" else nfd) if t == 0 else "t1",
            "item": i,
            "score": float((i + t) % 2),
        }
        for m in ("A", "B")
        for t in range(2)
        for i in range(4)
    ]
    run, result = import_rows(tmp_path, rows)
    results = json.loads((run / "results.json").read_text())
    for model in ("A", "B"):
        templates = results["models"][model]["tasks"]["x"]["decodings"]["imported"]["templates"]
        assert sorted(templates) == [nfc, "t1"]
    assert "NFC" in " ".join(result.output.split())
    assert any("NFC" in note for note in results["imported"]["notes"])


@pytest.mark.parametrize(("row", "field"), [(("A", " qa"), "task"), (("A ", "qa"), "model")])
def test_spaces_around_a_name_are_refused(tmp_path: Path, row: tuple, field: str) -> None:
    """Item 9: `A, qa` after a CSV comma made task ` qa` beside `qa`."""
    rows = [
        (*(row if (t, i) == (1, 2) else ("A", "qa")), f"t{t}", i, i % 2)
        for t in range(2)
        for i in range(4)
    ]
    _refused(tmp_path, _csv(tmp_path / "t.csv", rows), "t.csv", "line 8", f"field {field}", "space")


def test_a_repeated_json_key_is_refused(tmp_path: Path) -> None:
    """Item 10: `{"score": 1, "score": 0}` was read as its last value."""
    path = tmp_path / "t.jsonl"
    lines = [
        json.dumps({"model": "m", "task": "x", "template": f"t{t}", "item": i, "score": i % 2})
        for t in range(2)
        for i in range(4)
    ]
    lines[5] = lines[5][:-1] + ', "score": 0}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _refused(tmp_path, path, "t.jsonl", "line 6", "'score' twice")


def test_a_repeated_key_in_a_json_document_is_refused(tmp_path: Path) -> None:
    """Item 10: the same in a whole-document reader (an lm-eval results file)."""
    from hakari.errors import HakariInputError
    from hakari.interop.options import read_json

    path = tmp_path / "results.json"
    path.write_text('{"results": {"a": 1, "a": 2}}', encoding="utf-8")
    with pytest.raises(HakariInputError, match="'a' twice"):
        read_json(path)


def _level_rows(levels: dict[tuple[int, int], str | None]) -> list[dict]:
    """Three templates × 4 items; `levels[(template, item)]` the cue (None: no column)."""
    rows = []
    for t in range(3):
        for i in range(4):
            row = {"model": "m", "task": "x", "template": f"t{t}", "item": i, "score": (i + t) % 2}
            cue = levels.get((t, i), f"c{t % 2}")
            if cue is not None:
                row["level.cue"] = cue
            rows.append(row)
    return rows


def test_levels_missing_on_a_later_row_are_refused(tmp_path: Path) -> None:
    """Item 11: levels on a template's first row and none on a later one were accepted
    (the reverse was refused)."""
    path = write_jsonl(tmp_path / "t.jsonl", _level_rows({(1, 2): None}))
    _refused(tmp_path, path, "t.jsonl", "line 7", "field level", "template 't1'")


def test_a_template_without_levels_beside_ones_with_is_refused(tmp_path: Path) -> None:
    """Item 11: a template with no levels was left out of the attribution (2 of 3)."""
    path = write_jsonl(tmp_path / "t.jsonl", _level_rows({(2, i): None for i in range(4)}))
    _refused(tmp_path, path, "t.jsonl", "field level", "template 't2'", "no levels")


def test_eta_squared_stays_within_zero_one() -> None:
    """Item 11: eta² of a dimension that explains everything read 1.0000000000000087."""
    import numpy as np

    from hakari.aggregate.dimensions import shares

    for codes, x in (
        ([0, 0, 0, 1, 1, 1], [0.6, 0.6, 0.6, 0.5, 0.5, 0.5]),
        ([0, 1, 1], [1.0, 0.875, 0.875]),
    ):
        eta, _ = shares(np.array(codes), np.array(x), 2)
        assert 0.0 <= float(eta) <= 1.0
        assert float(eta) == pytest.approx(1.0, abs=1e-12)


def test_a_task_with_one_template_says_its_spread_is_not_measured(tmp_path: Path) -> None:
    """Item 12: one template gave std 0, a [0, 0] interval and Sharpe = mean, no word."""
    rows = [
        {"model": "m", "task": "x", "template": "t0", "item": i, "score": i % 2} for i in range(4)
    ]
    out = tmp_path / "run"
    result = succeed(
        ["import", "table", str(write_jsonl(tmp_path / "t.jsonl", rows)), "--output", str(out)]
    )
    said = " ".join(result.output.split())
    assert "task 'x' has one template: the spread over prompts is not measured" in said
    notes = json.loads((out / "results.json").read_text())["imported"]["notes"]
    assert any("one template" in n for n in notes)
    report = " ".join(succeed(["report", str(out)]).output.split())
    assert "spread over prompts is not measured" in report


@pytest.mark.parametrize("option", ["--model", "--task"])
def test_model_or_task_given_for_a_table_with_that_column_is_refused(
    tmp_path: Path, option: str
) -> None:
    """Item 13: the column won, yet imported.options recorded the option as applied."""
    path = _csv(tmp_path / "t.csv", _grid())
    _refused(tmp_path, path, "t.csv", f"field {option}", "column", extra=(option, "other"))


def test_an_undefined_correlation_is_said(tmp_path: Path) -> None:
    """Item 18: a template answering a constant has no Pearson (scipy: NaN); hakari counts
    it 0.0, chance, in the mean and the Sharpe score, and now says so."""
    rows = [
        {
            "model": "m",
            "task": "sts",
            "template": f"t{t}",
            "item": i,
            "answer": 2.5 if t == 1 else float(i),
            "gold": float(i % 3),
        }
        for t in range(3)
        for i in range(6)
    ]
    out, result = import_rows(tmp_path, rows, "--metric", "pearson")
    said = " ".join(result.output.split())
    assert "template 't1'" in said and "pearson is undefined" in said and "0.0" in said
    results = json.loads((out / "results.json").read_text())
    undefined = results["models"]["m"]["tasks"]["sts"]["decodings"]["imported"]["undefined"]
    assert undefined == {"pearson": {"t1": "constant_predictions"}}


def test_a_gunzipped_grid_in_a_grid_folder_is_read(tmp_path: Path) -> None:
    """Item 17: a `.json` grid in a folder was skipped (named directly, it was read)."""
    import gzip
    import shutil

    from tests.helpers.paths import FIXTURES

    grids = sorted((FIXTURES / "grids").glob("*demo_sentiment_en__*.json.gz"))[:2]
    both = tmp_path / "gz"
    mixed = tmp_path / "mixed"
    both.mkdir(), mixed.mkdir()
    for grid in grids:
        shutil.copy(grid, both / grid.name)
    shutil.copy(grids[0], mixed / grids[0].name)
    (mixed / grids[1].name.removesuffix(".gz")).write_bytes(gzip.decompress(grids[1].read_bytes()))
    got = {}
    for name, folder in (("gz", both), ("mixed", mixed)):
        imported("grid", folder, tmp_path / f"run-{name}")
        task = json.loads((tmp_path / f"run-{name}" / "results.json").read_text())["models"][
            "gemma3-270m"
        ]["tasks"]["demo_sentiment_en"]
        got[name] = {
            d: (dec["templates"], dec["aggregate"]) for d, dec in task["decodings"].items()
        }
    assert len(got["mixed"]) == 2
    assert got["mixed"] == got["gz"]


def test_models_on_different_templates_are_said(tmp_path: Path) -> None:
    """Item 19: A on t1-t3, B on t1-t2: the headline Sharpe put B ahead, the paired
    comparison on the shared t1-t2 put A ahead, with no note of the difference."""
    rows = [
        {"model": m, "task": "x", "template": f"t{t}", "item": i, "score": (i + t) % 2}
        for m, templates in (("A", (1, 2, 3)), ("B", (1, 2)))
        for t in templates
        for i in range(4)
    ]
    out, result = import_rows(tmp_path, rows)
    said = " ".join(result.output.split())
    assert "not on the same templates" in said and "'t3'" in said
    notes = json.loads((out / "results.json").read_text())["imported"]["notes"]
    assert any("not on the same templates" in n for n in notes)

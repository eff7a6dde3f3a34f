"""Hostile round five (issue 43), writers: one rule for every CSV hakari writes
(spreadsheet formulas), and exports that say what their run lost."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from hakari._util.spreadsheet import FORMULA_START
from hakari.cli import app
from tests.helpers.cli import assert_one_line, runner, succeed
from tests.helpers.imports import import_rows, imported, write_jsonl

HOSTILE = {"model": '=HYPERLINK("http://x")', "task": "@sum", "template": "+t"}


def _hostile_rows() -> list[dict]:
    return [
        {
            **HOSTILE,
            "template": f"{HOSTILE['template']}{k}",
            "item": i,
            "score": float(i % 2),
            "output": "-1+1",
            "answer": "=1",
            "gold": "=1",
        }
        for k in range(2)
        for i in range(4)
    ]


def _cells(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [cell for row in csv.reader(fh) for cell in row]


def test_every_csv_writer_escapes_formulas_alike(tmp_path: Path) -> None:
    """Item 15: `export --format table` wrote `=`, `+`, `@` names as they are; `report
    --csv` put an apostrophe before them. Both now use one rule, and the export's table
    imports back with the names unchanged."""
    run, _ = import_rows(tmp_path, _hostile_rows())
    succeed(["export", str(run), "--format", "table", "--output", str(tmp_path / "t.csv")])
    succeed(["report", str(run), "--csv", str(tmp_path / "csv")])
    written = _cells(tmp_path / "t.csv") + _cells(tmp_path / "csv" / "summary.csv")
    assert [c for c in written if c[:1] in FORMULA_START] == []
    assert '\'=HYPERLINK("http://x")' in _cells(tmp_path / "t.csv")
    assert '\'=HYPERLINK("http://x")' in _cells(tmp_path / "csv" / "summary.csv")
    back = tmp_path / "back"
    imported("table", tmp_path / "t.csv", back)
    results = json.loads((back / "results.json").read_text())
    assert list(results["models"]) == [HOSTILE["model"]]
    assert list(results["models"][HOSTILE["model"]]["tasks"]) == [HOSTILE["task"]]
    sample = json.loads((back / "samples.jsonl").read_text().splitlines()[0])
    assert (sample["answer"], sample["gold"], sample["output"]) == ("=1", "=1", "-1+1")


def test_an_export_of_a_run_that_lost_samples_is_refused(tmp_path: Path) -> None:
    """Item 20: samples.jsonl lost 8 of its 40 lines: the table had 32 rows without a
    word, and the EEE aggregate (t1 = 0.6) disagreed with its own instance records."""
    rows = [
        {"model": "m", "task": "x", "template": f"t{t}", "item": i, "score": float(i < 12)}
        for t in range(2)
        for i in range(20)
    ]
    run, _ = import_rows(tmp_path, rows)
    samples = run / "samples.jsonl"
    lines = samples.read_text().splitlines(keepends=True)
    samples.write_text("".join(lines[:20] + lines[28:]))
    for fmt, target in (("table", tmp_path / "t.csv"), ("eee", tmp_path / "eee")):
        result = runner.invoke(app, ["export", str(run), "--format", fmt, "--output", str(target)])
        assert_one_line(result.exit_code, result.output, "samples.jsonl", "t1", "12 rows", "20")
        assert not target.exists()


def test_scoring_an_import_without_outputs_or_golds_is_refused(tmp_path: Path) -> None:
    """Item 16: `hakari score --metrics rouge1` on an import of bare scores scored every
    sample 0.0 (its output "" against the gold "null"), none unscored, and said it
    updated results.json."""
    rows = [
        {"model": "m", "task": "x", "template": f"t{t}", "item": i, "score": float(i % 2)}
        for t in range(2)
        for i in range(4)
    ]
    run, _ = import_rows(tmp_path, rows)
    before = (run / "results.json").read_text(), (run / "samples.jsonl").read_text()
    result = runner.invoke(app, ["score", str(run), "--metrics", "rouge1"])
    assert_one_line(result.exit_code, result.output, "samples.jsonl", "no sample has an output")
    rows = [{**r, "output": f"answer {r['item']}"} for r in rows]
    import_rows(tmp_path, rows)  # again, into the same folder
    result = runner.invoke(app, ["score", str(run), "--metrics", "rouge1"])
    assert_one_line(result.exit_code, result.output, "samples.jsonl", "no sample has a gold")
    assert "rouge1" not in (run / "results.json").read_text()
    assert before[0] != ""  # the first refusal left the files as they were


@pytest.mark.slow
def test_scoring_a_run_where_some_golds_are_null_counts_them_unscored(tmp_path: Path) -> None:
    """Item 16, the rest: where only some samples have a gold, `hakari score --metrics
    rouge1` scored the others against the text "null" (0.0, none unscored): they are
    unscored, counted so in results.json, and the command says why."""
    rows = [
        {
            "model": "m",
            "task": "x",
            "template": f"t{t}",
            "item": i,
            "score": 1.0,
            "output": f"answer {i}",
            **({"gold": f"answer {i}"} if i < 2 else {}),
        }
        for t in range(2)
        for i in range(4)
    ]
    run = tmp_path / "run"
    table = str(write_jsonl(tmp_path / "t.jsonl", rows))
    succeed(["import", "table", table, "--output", str(run), "--n-boot", "0"])
    result = runner.invoke(app, ["score", str(run), "--metrics", "rouge1"])
    assert result.exit_code == 0, result.output
    assert "4 sample(s) have no gold: unscored by rouge1" in " ".join(result.output.split())
    doc = json.loads((run / "results.json").read_text(encoding="utf-8"))
    rescored = doc["models"]["m"]["tasks"]["x"]["decodings"]["imported"]["rescored"]["rouge1"]
    assert rescored["n_unscored"] == 4
    assert rescored["templates"] == {"t0": 1.0, "t1": 1.0}
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert [s["scores"]["rouge1"] for s in samples if s.get("gold") is None] == [None] * 4


def test_an_eee_export_of_a_model_with_a_long_name_is_written(tmp_path: Path) -> None:
    """Round six: a model named by 300 characters (a long local path) failed the Every
    Eval Ever export with "File name too long" and left empty folders; its folder name is
    cut to a bound with a digest, and the records keep the whole name."""
    name = "a" * 150 + "é" * 150
    rows = [
        {"model": name, "task": "x", "template": f"t{t}", "item": i, "score": float(i % 2)}
        for t in range(2)
        for i in range(4)
    ]
    run, out = tmp_path / "run", tmp_path / "eee"
    table = str(write_jsonl(tmp_path / "t.jsonl", rows))
    succeed(["import", "table", table, "--output", str(run), "--n-boot", "0"])
    succeed(["export", str(run), "--format", "eee", "--output", str(out)])
    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert len(files) == 2
    assert all(len(part.encode()) <= 255 for f in files for part in f.relative_to(out).parts)
    record = json.loads(next(f for f in files if f.suffix == ".json").read_text("utf-8"))
    assert record["model_info"]["id"] == name

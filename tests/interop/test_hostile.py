"""`hakari import` / `hakari export` attacked as a hostile user would (issue 38): each
case is refused in one line (exit 2, nothing written) or handled sanely; the list with
the outcomes is in docs/import.md, "Hostile input"."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from hakari._util.jsonl import MAX_LINE_BYTES
from hakari.cli import app
from tests.helpers.cli import assert_one_line, runner, succeed
from tests.helpers.imports import import_rows, score_rows, write_jsonl
from tests.helpers.paths import FIXTURES


def _import(path: Path, out: Path, *extra: str, source: str = "table") -> tuple[int, str]:
    result = runner.invoke(
        app, ["import", source, str(path), "--output", str(out), "--n-boot", "0", *extra]
    )
    return result.exit_code, result.output


def _refused(tmp_path: Path, path: Path, *needles: str, out: Path | None = None) -> None:
    out = out or tmp_path / "out"
    existed = out.exists()
    code, text = _import(path, out)
    assert_one_line(code, text, *needles)
    assert existed or not out.exists(), "something was written"


def test_a_symlink_loop_and_a_folder_named_like_a_table(tmp_path: Path) -> None:
    os.symlink(tmp_path / "loop.csv", tmp_path / "loop.csv")
    _refused(tmp_path, tmp_path / "loop.csv", "loop.csv", "field PATH")
    (tmp_path / "d.csv").mkdir()
    _refused(tmp_path, tmp_path / "d.csv", "d.csv", "holds no tables")


def test_a_folder_that_links_to_itself_is_read_once(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    os.symlink(folder, folder / "self")
    write_jsonl(folder / "a.jsonl", score_rows())
    code, text = _import(folder, tmp_path / "run")
    assert code == 0, text
    assert "10 scored cells" in text


def test_a_json_line_without_end_is_refused_at_the_line_bound(tmp_path: Path) -> None:
    """A JSON Lines table whose first line has no end (zeros, sparse: no disk) is one
    error at the line bound; /dev/zero itself is refused at its open."""
    table = tmp_path / "t.jsonl"
    with table.open("wb") as fh:
        fh.truncate(MAX_LINE_BYTES + 2)
    _refused(tmp_path, table, "t.jsonl", "longer than 64 MiB")
    table.unlink()
    os.symlink("/dev/zero", table)
    _refused(tmp_path, table, "t.jsonl", "not a regular file (a device)")


def test_deeply_nested_json(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    row = json.dumps(score_rows()[0])[:-1]
    path.write_text(f'{row}, "extra": {"[" * 100_000}{"]" * 100_000}}}\n', encoding="utf-8")
    _refused(tmp_path, path, "t.jsonl", "line 1", "nested too deeply")


def test_a_csv_with_a_byte_order_mark_reads_its_first_column(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    body = "".join(f"m,x,t{t},{i},{i % 2}\n" for t in range(2) for i in range(5))
    path.write_bytes("\ufeffmodel,task,template,item,score\n".encode() + body.encode())
    code, text = _import(path, tmp_path / "run")
    assert code == 0, text
    assert '"m"' in (tmp_path / "run" / "results.json").read_text()


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("t\x000", "U+0000"),
        ("t0\n", "U+000A"),
        ("t\u200b0", "U+200B"),  # zero-width space: prints as t0
        ("\u202et0", "U+202E"),  # right-to-left override: reorders a report's line
    ],
)
def test_invisible_characters_in_a_name_are_refused(tmp_path: Path, name: str, shown: str) -> None:
    rows = [{**r, "template": name if r["template"] == "t0" else "t1"} for r in score_rows()]
    _refused(tmp_path, write_jsonl(tmp_path / "t.jsonl", rows), "field template", shown)


def test_nul_bytes_in_a_csv_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    body = "".join(f"m,x,t{t}\x00,{i},{i % 2}\n" for t in range(2) for i in range(5))
    path.write_bytes(b"model,task,template,item,score\n" + body.encode())
    _refused(tmp_path, path, "t.csv", "line 2", "U+0000")


def test_right_to_left_letters_are_a_name_like_any_other(tmp_path: Path) -> None:
    rows = [{**r, "template": "قالب" + r["template"]} for r in score_rows()]
    code, text = _import(write_jsonl(tmp_path / "t.jsonl", rows), tmp_path / "run")
    assert code == 0, text
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    templates = results["models"]["m"]["tasks"]["x"]["decodings"]["imported"]["templates"]
    assert set(templates) == {"قالبt0", "قالبt1"}


def test_parquet_with_wrong_types(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = score_rows()
    columns = {k: [r[k] for r in rows] for k in rows[0]}
    pq.write_table(pa.table({**columns, "score": ["0.5x"] * len(rows)}), tmp_path / "s.parquet")
    _refused(tmp_path, tmp_path / "s.parquet", "s.parquet", "line 1", "field score")
    pq.write_table(pa.table({**columns, "template": [[1]] * len(rows)}), tmp_path / "t.parquet")
    _refused(tmp_path, tmp_path / "t.parquet", "t.parquet", "field template", "must be text")
    (tmp_path / "g.parquet").write_text("not parquet")
    _refused(tmp_path, tmp_path / "g.parquet", "g.parquet", "not a readable Parquet file")


def test_level_columns_with_an_empty_or_a_reserved_looking_dimension(tmp_path: Path) -> None:
    rows = [{**r, "level.": r["template"]} for r in score_rows()]
    _refused(
        tmp_path, write_jsonl(tmp_path / "e.jsonl", rows), "level. (its dimension)", "is empty"
    )
    rows = [{**r, "level.model": r["template"]} for r in score_rows()]
    code, text = _import(write_jsonl(tmp_path / "m.jsonl", rows), tmp_path / "run")
    assert code == 0, text  # a dimension named "model": its own namespace, nothing shadowed
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    template = results["models"]["m"]["tasks"]["x"]["decodings"]["imported"]["templates"]["t0"]
    assert template["levels"] == {"model": "t0"}


def test_output_inside_or_equal_to_the_input_folder(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", score_rows())
    _refused(tmp_path, folder, "field --output", "inside the input folder", out=folder / "run")
    _refused(tmp_path, folder, "field --output", "is the input folder", out=folder)
    _refused(tmp_path, folder / "a.jsonl", "field --output", "not a folder", out=folder / "a.jsonl")


def test_output_at_an_existing_run(tmp_path: Path) -> None:
    table = write_jsonl(tmp_path / "t.jsonl", score_rows())
    native = tmp_path / "native"
    native.mkdir()
    (native / "results.json").write_text('{"schema_version": 1, "models": {}}')
    _refused(tmp_path, table, "field --output", "not imported", out=native)
    assert (native / "results.json").read_text() == '{"schema_version": 1, "models": {}}'
    code, text = _import(table, tmp_path / "run")
    assert code == 0, text
    rows = [{**r, "score": 1.0} for r in score_rows()]
    code, text = _import(write_jsonl(tmp_path / "t.jsonl", rows), tmp_path / "run")
    assert code == 0, text  # an earlier import is replaced whole
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["models"]["m"]["tasks"]["x"]["decodings"]["imported"]["aggregate"]["score"][
        "mean"
    ] == pytest.approx(1.0)


def test_export_to_a_path_that_exists(tmp_path: Path) -> None:
    import_rows(tmp_path, score_rows())
    (tmp_path / "d.csv").mkdir()
    result = runner.invoke(
        app,
        ["export", str(tmp_path / "run"), "--format", "table", "--output", str(tmp_path / "d.csv")],
    )
    assert_one_line(result.exit_code, result.output, "d.csv", "is a folder")
    existing = tmp_path / "old.csv"
    existing.write_text("keep\n")
    succeed(["export", str(tmp_path / "run"), "--format", "table", "--output", str(existing)])
    assert existing.read_text().startswith("model,task,decoding,template,item")  # replaced
    for target, needle in [
        (tmp_path / "run" / "samples.jsonl", "samples.jsonl"),
        (tmp_path / "run", "a table is written as"),
    ]:
        before = target.read_bytes() if target.is_file() else None
        result = runner.invoke(
            app, ["export", str(tmp_path / "run"), "--format", "table", "--output", str(target)]
        )
        assert result.exit_code == 2 and needle in result.output, result.output
        assert before is None or target.read_bytes() == before
    result = runner.invoke(
        app, ["export", str(tmp_path / "run"), "--format", "eee", "--output", str(tmp_path / "run")]
    )
    assert_one_line(result.exit_code, result.output, "is the input folder")


def test_scores_outside_zero_one_are_read_on_their_declared_range(tmp_path: Path) -> None:
    """Scores of -2 and 3 (issue 43 #1: refused without --score-range, interop.scale):
    rescaled to 0 and 1, the template's mean is 0.5 on [0, 1]."""
    rows = [{**r, "score": r["score"] * 5 - 2} for r in score_rows(8)]  # -2 and 3
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    code, text = _import(path, tmp_path / "run", "--n-boot", "200", "--score-range=-2:3")
    assert code == 0, text
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    decoding = results["models"]["m"]["tasks"]["x"]["decodings"]["imported"]
    assert decoding["templates"]["t0"]["metrics"]["score"] == pytest.approx(0.5)
    ci = decoding["templates"]["t0"]["ci"]["score"]
    assert 0 <= ci["low"] < 0.5 < ci["high"] <= 1


def test_an_inspect_log_with_an_eval_in_error_status(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai", reason="inspect_ai (hakari[interop]) is not installed")
    from inspect_ai.log import EvalError, read_eval_log, write_eval_log

    logs = tmp_path / "logs"
    logs.mkdir()
    for path in sorted((FIXTURES / "interop" / "inspect").glob("*.eval")):
        log = read_eval_log(str(path))
        if "p1" in path.name:
            error = EvalError(message="boom", traceback="tb", traceback_ansi="tb")
            log.status, log.error = "error", error
            assert log.samples
            log.samples[-1].scores, log.samples[-1].error = None, error
        write_eval_log(log, str(logs / path.name))
    shutil.rmtree(tmp_path / "run", ignore_errors=True)
    code, text = _import(logs, tmp_path / "run", "--templates", "arg:prompt", source="inspect")
    assert code == 0, text
    imported = json.loads((tmp_path / "run" / "results.json").read_text())["imported"]
    assert any("status is 'error'" in note for note in imported["notes"])
    assert any("1 sample(s) ended in an error" in note for note in imported["notes"])
    assert imported["dropped"][0]["missing_by_template"] == {"p1": 1}

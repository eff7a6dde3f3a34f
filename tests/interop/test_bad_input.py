"""Bad input to `hakari import` / `hakari export`: one line naming the file, line and
field, exit 2, nothing written; hostile names escaped by the reports; secrets in a log's
recorded arguments redacted."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from hakari._util.jsonl import MAX_LINE_BYTES
from hakari.cli import app
from tests.helpers.cli import assert_one_line, runner, succeed
from tests.helpers.imports import imported, score_rows
from tests.helpers.paths import FIXTURES

LM_EVAL = FIXTURES / "interop" / "lm_eval"


def _import(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["import", *args])
    return result.exit_code, result.output


def _table(path: Path, rows: list[dict] | str) -> Path:
    text = rows if isinstance(rows, str) else "".join(json.dumps(r) + "\n" for r in rows)
    path.write_text(text)
    return path


def _refused(
    tmp_path: Path, source: str, path: Path, *needles: str, extra: tuple[str, ...] = ()
) -> None:
    out = tmp_path / "out"
    code, text = _import(source, str(path), "--output", str(out), *extra)
    assert_one_line(code, text, *needles)
    assert not out.exists() or not any(out.iterdir()), "something was written"


def test_missing_field(tmp_path: Path) -> None:
    rows = score_rows()
    del rows[3]["item"]
    _refused(
        tmp_path, "table", _table(tmp_path / "t.jsonl", rows), "t.jsonl", "line 4", "field item"
    )


@pytest.mark.parametrize("bad", ["abc", None, float("nan"), [1]])
def test_non_numeric_or_nan_score(tmp_path: Path, bad: object) -> None:
    rows = score_rows()
    rows[2]["score"] = bad
    text = "".join(json.dumps(r) + "\n" for r in rows)  # json.dumps writes NaN as NaN
    _refused(tmp_path, "table", _table(tmp_path / "t.jsonl", text), "line 3", "field score")


def test_nan_in_a_csv(tmp_path: Path) -> None:
    path = _table(tmp_path / "t.csv", "model,task,template,item,score\nm,x,t0,0,1\nm,x,t0,1,nan\n")
    _refused(tmp_path, "table", path, "t.csv", "line 3", "finite number", "field score")


def test_duplicate_item_within_a_template(tmp_path: Path) -> None:
    rows = score_rows()
    rows.append(dict(rows[1]))
    _refused(
        tmp_path,
        "table",
        _table(tmp_path / "t.jsonl", rows),
        "line 11",
        "duplicate item '1'",
        "first at line 2",
    )


def test_a_template_with_one_item(tmp_path: Path) -> None:
    rows = [*score_rows(), {"model": "m", "task": "x", "template": "t9", "item": 0, "score": 1.0}]
    _refused(tmp_path, "table", _table(tmp_path / "t.jsonl", rows), "template 't9'", "1 item")


def test_a_pattern_that_matches_no_task(tmp_path: Path) -> None:
    _refused(
        tmp_path,
        "lm-eval",
        LM_EVAL,
        "field --templates",
        "matches none of the source's tasks",
        "demo_mc_p0",
        extra=("--templates", "noreval_{task}_p{template}"),
    )


def test_a_group_that_does_not_exist(tmp_path: Path) -> None:
    _refused(tmp_path, "lm-eval", LM_EVAL, "field --group", "demo_mc", extra=("--group", "nope"))


def test_unknown_metric(tmp_path: Path) -> None:
    path = _table(tmp_path / "t.jsonl", score_rows())
    _refused(
        tmp_path,
        "table",
        path,
        "field --metric",
        "unknown metric 'acuracy'",
        "accuracy",
        extra=("--metric", "acuracy"),
    )


def test_unknown_eee_schema_version(tmp_path: Path) -> None:
    record = {"schema_version": "9.0.0", "evaluation_name": "x", "model_id": "m", "sample_id": "1"}
    path = tmp_path / "eee"
    path.mkdir()
    _table(path / "a_samples.jsonl", [record])
    _refused(
        tmp_path,
        "eee",
        path,
        "a_samples.jsonl",
        "line 1",
        "schema_version '9.0.0'",
        "field schema_version",
    )


def test_lm_eval_documents_that_differ_between_templates(tmp_path: Path) -> None:
    copy = tmp_path / "lm"
    shutil.copytree(LM_EVAL, copy)
    sample = next(copy.rglob("samples_demo_mc_p1_*.jsonl"))
    lines = sample.read_text().splitlines()
    first = json.loads(lines[0])
    first["doc_hash"] = "0" * 64
    sample.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    _refused(
        tmp_path,
        "lm-eval",
        copy,
        "doc_id 0 is another document",
        "field doc_hash",
        extra=("--group", "demo_mc"),
    )


def test_a_file_without_end_is_refused_after_the_line_bound(tmp_path: Path) -> None:
    """A table of zeros without a line break (sparse: no disk) is one error after one
    line's bound, not a read of the whole; a link to /dev/zero, a read without end, is
    refused at its open (`hakari._util.infiles`)."""
    table = tmp_path / "t.csv"
    with table.open("wb") as fh:
        fh.truncate(MAX_LINE_BYTES + 2)
    _refused(tmp_path, "table", table, "t.csv", "longer than 64 MiB")
    table.unlink()
    os.symlink("/dev/zero", table)
    _refused(tmp_path, "table", table, "t.csv", "field PATH", "not a regular file (a device)")


def test_parquet_without_pyarrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from hakari.errors import HakariInputError
    from hakari.interop.table import rows

    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(HakariInputError, match=r"needs pyarrow: pip install 'hakari\[interop\]'"):
        list(rows(tmp_path / "t.parquet"))


def test_html_in_task_and_template_names_is_escaped(tmp_path: Path) -> None:
    rows = [
        {**r, "task": "<script>alert(1)</script>", "template": f"<b>{r['template']}</b>"}
        for r in score_rows(6)
    ]
    path = _table(tmp_path / "t.jsonl", rows)
    imported("table", path, tmp_path / "run")
    page = tmp_path / "page.html"
    succeed(["report", str(tmp_path / "run"), "--html", str(page)])
    html = page.read_text()
    assert "<script>alert(1)</script>" not in html and "<b>t0</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    markdown = succeed(["report", str(tmp_path / "run"), "--markdown"]).output
    assert "<script>" not in markdown


def test_secrets_in_recorded_arguments_are_redacted(tmp_path: Path) -> None:
    imported("lm-eval", LM_EVAL, tmp_path / "run", "--group", "demo_mc")
    text = (tmp_path / "run" / "results.json").read_text() + (
        tmp_path / "run" / "samples.jsonl"
    ).read_text()
    assert "hf_abcdefghijklmnopqrstuvwxyz123456" not in text
    assert "token=***" in text


def test_export_refuses_an_unknown_format_and_a_folder_that_is_no_run(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["export", str(tmp_path), "--format", "csv", "--output", str(tmp_path / "x")]
    )
    assert_one_line(result.exit_code, result.output, "field --format", "unknown value 'csv'")
    result = runner.invoke(
        app, ["export", str(tmp_path), "--format", "table", "--output", str(tmp_path / "x.csv")]
    )
    assert_one_line(result.exit_code, result.output, "results.json", "missing")

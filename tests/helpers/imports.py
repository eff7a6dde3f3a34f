"""Setting up an import test: rows written as a JSON Lines table, and `hakari import` run
on a table or another tool's logs that must succeed.

Rows are written with `json.dumps`'s defaults (non-ASCII text as `\\u` escapes), as the
hostile cases were written: a case about composed and decomposed spellings reads them
back through JSON's escapes, not from raw UTF-8 bytes. The import runs without a
bootstrap (`--n-boot 0`): these tests read what was imported and what was said, not
intervals.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import Result

from tests.helpers.cli import succeed


def score_rows(n_items: int = 5, templates: tuple[str, ...] = ("t0", "t1")) -> list[dict]:
    """A table of per-item scores: model m, task x, each template's items 0, 1, ...
    scored 0, 1, 0, ..."""
    return [
        {"model": "m", "task": "x", "template": t, "item": i, "score": float(i % 2)}
        for t in templates
        for i in range(n_items)
    ]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def imported(source: str, path: Path, out: Path, *extra: str) -> Result:
    """`hakari import SOURCE PATH --output OUT --n-boot 0 EXTRA...`; it must exit 0."""
    return succeed(["import", source, str(path), "--output", str(out), "--n-boot", "0", *extra])


def import_rows(folder: Path, rows: list[dict], *extra: str) -> tuple[Path, Result]:
    """`rows` written as FOLDER/t.jsonl and imported as a table into FOLDER/run (the run
    folder and the command's result)."""
    run = folder / "run"
    return run, imported("table", write_jsonl(folder / "t.jsonl", rows), run, *extra)

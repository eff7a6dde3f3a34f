"""`hakari import table`: a long table, one row per model × task × template × item (CSV,
JSON Lines or Parquet, by the file's suffix), streamed row by row with every line bounded.

Columns (the names are the defaults; `--column ROLE=NAME` maps another name to a role):

* `model`, `task`, `template`, `item` (required; `--model` / `--task` stand in for an
  absent column);
* `score`: a per-item score (other columns by `--score NAME`, repeatable), unless
  `--metric` names corpus metrics computed from `answer` and `gold`;
* `run`: several runs of a cell, their scores averaged per cell (`--run R` keeps one);
* `decoding` (default "imported"), `output`, `prompt`, `fallback` (counted as
  `fallback_rate`);
* `level.DIMENSION`: the template's level on a dimension (the per-dimension attribution);
* `metrics`, `language`, `qa_mode`, written by `hakari export`: a task's metrics
  ("accuracy,mcc": computed from answer and gold; "score:acc": the column acc), its
  language, its EM/F1 gold normalisation.

The evalstats layout (`model, prompt, item, run, score`) reads as it is: with no
`template` column, `prompt` names the template, and the task is `--task` (else the file's
name without its suffix).

CSV cells are text; in the `answer` and `gold` columns a cell that starts with `[` or `"`
is read as JSON (a list of acceptable answers, or a string that itself starts with one of
them), so hakari's export writes QA golds (lists) and labels alike. An empty cell is
absent. A cell starting with an apostrophe before `=`, `+`, `-`, `@` or another
apostrophe loses that apostrophe (how every CSV hakari writes escapes spreadsheet
formulas: `hakari._util.spreadsheet`). JSON Lines and Parquet keep their types.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hakari._util.infiles import open_input_text
from hakari._util.jsonl import MAX_LINE_BYTES, bounded_lines, iter_jsonl
from hakari._util.spreadsheet import unescape_cell
from hakari.errors import HakariInputError
from hakari.interop.cells import (
    Cell,
    ImportedGrid,
    MetricSpec,
    Origin,
    item_id,
    label,
    score_value,
)
from hakari.interop.options import ImportOptions, Reading, expand, listed_metrics

ROLES = (
    "model",
    "task",
    "template",
    "item",
    "score",
    "answer",
    "gold",
    "run",
    "decoding",
    "output",
    "prompt",
    "fallback",
    "metrics",
    "language",
    "qa_mode",
)
LEVEL_PREFIX = "level."
SUFFIXES = (".csv", ".jsonl", ".parquet")
DEFAULT_DECODING = "imported"
PARQUET_BATCH = 65536


def read(paths: list[Path], options: ImportOptions) -> Reading:
    unknown = set(options.columns) - set(ROLES)
    if unknown:
        raise HakariInputError(
            f"unknown role {sorted(unknown)[0]!r} (one of {', '.join(ROLES)})", field="--column"
        )
    files = expand(paths, [f"*{s}" for s in SUFFIXES], "tables")
    reading = Reading(ImportedGrid(), files=files)
    for path in files:
        _read_table(path, reading, options)
    return reading


def rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, row) of a table by its suffix; CSV lines and JSON Lines rows bounded."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from iter_jsonl(path, field="PATH")
    elif suffix == ".csv":
        yield from _csv_rows(path)
    elif suffix == ".parquet":
        yield from _parquet_rows(path)
    else:
        raise HakariInputError(
            f"a table is {', '.join(SUFFIXES)} (by its suffix)", file=str(path), field="PATH"
        )


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    csv.field_size_limit(MAX_LINE_BYTES)
    try:
        with open_input_text(path, encoding="utf-8-sig", newline="", field="PATH") as fh:
            reader = csv.reader(bounded_lines(fh, path, "PATH", "a CSV file"))
            header = next(reader, None)
            if header is None:
                raise HakariInputError("empty table: no header row", file=str(path))
            if len(set(header)) != len(header):
                raise HakariInputError("the header names a column twice", file=str(path))
            for values in reader:
                if not values:
                    continue
                if len(values) != len(header):
                    raise HakariInputError(
                        f"line {reader.line_num}: {len(values)} cells, the header has "
                        f"{len(header)}",
                        file=str(path),
                    )
                yield (
                    reader.line_num,
                    {k: unescape_cell(v) for k, v in zip(header, values, strict=True) if v != ""},
                )
    except UnicodeDecodeError as exc:
        raise HakariInputError(f"not UTF-8 text (byte {exc.start})", file=str(path)) from None
    except csv.Error as exc:
        raise HakariInputError(f"not a CSV file: {exc}", file=str(path)) from None
    except OSError as exc:
        raise HakariInputError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise HakariInputError(
            "reading Parquet needs pyarrow: pip install 'hakari[interop]' (or pyarrow), or "
            "give the table as CSV or JSON Lines",
            file=str(path),
        ) from None
    try:
        table = pq.ParquetFile(path)
        line = 0
        for batch in table.iter_batches(batch_size=PARQUET_BATCH):
            for row in batch.to_pylist():
                line += 1
                yield line, {k: v for k, v in row.items() if v is not None}
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise HakariInputError(f"not a readable Parquet file: {exc}", file=str(path)) from None


def _read_table(path: Path, reading: Reading, options: ImportOptions) -> None:
    names = {role: options.columns.get(role, role) for role in ROLES}
    first = True
    layout: dict[str, Any] = {}
    for line, row in rows(path):
        origin = Origin(str(path), line)
        if first:
            layout = _layout(path, row, names, options, reading)
            first = False
        _add_row(reading.grid, row, origin, layout, names, options)
    if first:
        raise HakariInputError("the table has no rows", file=str(path))


def _layout(
    path: Path, row: dict[str, Any], names: dict[str, str], options: ImportOptions, reading: Reading
) -> dict[str, Any]:
    """What the first row says about the table: where the template comes from, the
    task's default name, the default score column."""
    for role, given in (("model", options.model), ("task", options.task)):
        if given is not None and names[role] in row:
            raise HakariInputError(
                f"--{role} {given!r} is given, but the table has a {names[role]!r} column, "
                f"which names the {role} of every row: drop --{role} (or map another column "
                f"with --column {role}=NAME)",
                file=str(path),
                field=f"--{role}",
            )
    layout: dict[str, Any] = {"template": names["template"], "task_default": options.task}
    if names["template"] not in row and "template" not in options.columns and "prompt" in row:
        layout["template"] = "prompt"  # the evalstats layout
        names["prompt"] = "\x00none"
        reading.notes.append(f"{path.name}: no 'template' column: 'prompt' names the template")
    if names["task"] not in row and options.task is None:
        layout["task_default"] = path.name.split(".")[0]
        reading.notes.append(
            f"{path.name}: no 'task' column: the task is {layout['task_default']!r}"
        )
    return layout


def _add_row(
    grid: ImportedGrid,
    row: dict[str, Any],
    origin: Origin,
    layout: dict[str, Any],
    names: dict[str, str],
    options: ImportOptions,
) -> None:
    def need(role: str, column: str | None = None, default: Any = None) -> Any:
        column = column or names[role]
        if column in row:
            return row[column]
        if default is not None:
            return default
        hint = f" (or give --{role})" if role in ("model", "task") else ""
        raise origin.error(f"missing field {column!r}{hint}", column)

    model = label(need("model", default=options.model), origin, names["model"])
    task = label(need("task", default=layout["task_default"]), origin, names["task"])
    template = label(need("template", layout["template"]), origin, layout["template"])
    item = item_id(need("item"), origin, names["item"])
    decoding = label(
        row.get(names["decoding"], options.decoding or DEFAULT_DECODING), origin, "decoding"
    )
    metrics = _metrics(row, names, options, origin)
    info = grid.task(task, metrics, origin)
    _task_settings(info, row, names, options, origin)
    scores = {
        m.key: score_value(need("score", m.key), origin, m.key)
        for m in metrics
        if not m.from_answers
    }
    cell = Cell(scores, origin)
    if any(m.from_answers for m in metrics):
        cell.answer = _typed(row.get(names["answer"]), origin)
        cell.gold = _typed(need("gold"), origin)
    else:
        cell.answer = _typed(row.get(names["answer"]), origin)
        if names["gold"] in row:
            cell.gold = _typed(row[names["gold"]], origin)
    for role in ("output", "prompt"):
        if names[role] in row:
            setattr(cell, role, str(row[names[role]]))
    if names["fallback"] in row:
        cell.extra["fallback"] = _flag(row[names["fallback"]], origin, names["fallback"])
    levels = {
        label(k[len(LEVEL_PREFIX) :], origin, f"{k} (its dimension)"): label(v, origin, k)
        for k, v in row.items()
        if k.startswith(LEVEL_PREFIX)
    } or None
    run = row.get(names["run"])
    if run is not None:
        run = label(run, origin, names["run"])
        if options.run is not None and run != options.run:
            return
    grid.add((model, task, decoding), template, item, cell, levels=levels, run=run)


def _metrics(
    row: dict[str, Any], names: dict[str, str], options: ImportOptions, origin: Origin
) -> list[MetricSpec]:
    """`--metric` / `--score`, else the row's `metrics` (hakari's export), else `score`."""
    if options.metrics or options.scores:
        return options.metric_specs(())
    listed = row.get(names["metrics"])
    if listed is not None:
        return listed_metrics(str(listed), origin, names["metrics"])
    return [MetricSpec(names["score"])]


def _task_settings(
    info: Any, row: dict[str, Any], names: dict[str, str], options: ImportOptions, origin: Origin
) -> None:
    language = options.language or row.get(names["language"]) or info.language
    if language not in ("en", "ja"):
        raise origin.error(f"language must be en or ja, got {language!r:.20}", names["language"])
    qa_mode = row.get(names["qa_mode"], options.qa_mode)
    if qa_mode not in ("first-line", "paper"):
        raise origin.error(
            f"qa_mode must be first-line or paper, got {qa_mode!r:.20}", names["qa_mode"]
        )
    info.language, info.qa_mode = language, qa_mode


def _typed(value: Any, origin: Origin) -> Any:
    """A CSV answer or gold: JSON when it starts with `[` or `"`, else the text."""
    if isinstance(value, str) and value[:1] in ("[", '"'):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            return value
        if isinstance(decoded, str) or (
            isinstance(decoded, list) and all(isinstance(v, str) for v in decoded)
        ):
            return decoded
    if isinstance(value, float) and math.isnan(value):
        raise origin.error("answer or gold is NaN", "gold")
    return value


def _flag(value: Any, origin: Origin, column: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", ""):
        return False
    raise origin.error(f"{column} must be true or false, got {value!r:.20}", column)


def csv_cell(value: Any) -> str:
    """How the export writes an answer or gold into a CSV cell (read back by `_typed`)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if value[:1] in ("[", '"') else value
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return repr(value) if isinstance(value, float) else str(value)

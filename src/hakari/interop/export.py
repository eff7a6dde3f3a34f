"""`hakari export RUN --format table|eee --output PATH`: a finished run (native or
imported) written out as a long table or as Every Eval Ever records.

The table has every column `hakari import table` needs to give back the same statistics
(the same `--alpha`, `--n-boot` and `--seed`): model (results.json's key), task,
decoding, template, item, answer, gold, fallback, output, `level.DIMENSION`, and per task
`metrics` (its metrics: a corpus metric's name, recomputed from answer and gold, or
`score:COLUMN` for a per-item score the run's samples carry, written in COLUMN),
`language` and `qa_mode` (EM/F1's normalisation). A `score` column holds the per-item
score of the task's first metric that has one (a native accuracy's 0/1), for other tools
(evalstats reads the table as it is). Rows follow samples.jsonl: template order is kept.

The format is the output's suffix: `.csv`, `.jsonl` or `.parquet` (pyarrow). In CSV, a text
cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@`...) gets a leading apostrophe,
the one rule of every CSV hakari writes (`hakari._util.spreadsheet`); the table reader
removes it, so the names come back as they were.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hakari._util.atomic import (
    RESULTS_FILE,
    SAMPLES_FILE,
    Output,
    atomic_open,
    check_output,
    json_line,
)
from hakari._util.jsonl import iter_jsonl
from hakari._util.spreadsheet import escape_cell
from hakari.errors import HakariInputError
from hakari.interop.options import SCORE_PREFIX
from hakari.interop.table import csv_cell
from hakari.results import EvalResults
from hakari.scoring import corpus

FORMATS = ("table", "eee")
TABLE_SUFFIXES = (".csv", ".jsonl", ".parquet")


def read_run(run: Path) -> tuple[EvalResults, Path]:
    if not run.is_dir():
        raise HakariInputError("not a run folder", file=str(run), field="RUN")
    results_path, samples_path = run / RESULTS_FILE, run / SAMPLES_FILE
    for path in (results_path, samples_path):
        if not path.is_file():
            raise HakariInputError("missing: is this a finished run folder?", file=str(path))
    return EvalResults.read(results_path), samples_path


class _Metrics:
    """Per task: its metrics as the table names them, and per-item scoring."""

    def __init__(self, results: EvalResults) -> None:
        self.results = results
        self.kinds: dict[str, list[str]] = {}

    def of(self, task: str, sample: dict[str, Any]) -> list[str]:
        """The task's metrics, `score:KEY` for the scores the samples carry."""
        known = self.kinds.get(task)
        if known is not None:
            return known
        names: list[str] = []
        for model in self.results.models.values():
            if task in model.tasks:
                names = list(model.tasks[task].metrics)
                break
        scores = _scores(sample)
        out = [f"{SCORE_PREFIX}{m}" if m in scores else m for m in names]
        for m in out:
            if not m.startswith(SCORE_PREFIX) and m not in corpus.names():
                raise HakariInputError(
                    f"task {task!r}: metric {m!r} is neither registered nor in the samples' scores",
                    field="RUN",
                )
        self.kinds[task] = out
        return out


def _language(results: EvalResults, task: str) -> str:
    for model in results.models.values():
        if task in model.tasks:
            return model.tasks[task].language
    return "en"


def table_rows(run: Path, *, with_prompt: bool = False) -> Iterator[dict[str, Any]]:
    """The long table of a run, one row per sample (samples.jsonl's order); the prompts
    too when asked (the Every Eval Ever records keep them)."""
    results, samples_path = read_run(run)
    keys = results.sample_model_keys()
    metrics = _Metrics(results)
    qa_mode = results.config.qa_mode or "first-line"
    levels = _levels(results)
    for line, sample in iter_jsonl(samples_path, field="RUN"):
        try:
            model, task = keys.get(sample["model"], sample["model"]), sample["task"]
            template, decoding = str(sample["template_id"]), sample["decoding"]
        except KeyError as exc:
            raise HakariInputError(
                f"line {line}: sample without {exc.args[0]!r}", file=str(samples_path)
            ) from None
        names = metrics.of(task, sample)
        row: dict[str, Any] = {
            "model": model,
            "task": task,
            "decoding": decoding,
            "template": template,
            "item": str(sample.get("item", sample.get("index"))),
        }
        scores = _scores(sample)
        first = _first_item_score(names, sample, scores, _language(results, task), qa_mode)
        if first is not None:
            row["score"] = first
        for name in names:
            if name.startswith(SCORE_PREFIX):
                row[name[len(SCORE_PREFIX) :]] = scores[name[len(SCORE_PREFIX) :]]
        row.update(
            answer=sample.get("answer"),
            gold=sample.get("gold"),
            fallback=bool(sample.get("fallback", False)),
            output=sample.get("output", ""),
            metrics=",".join(names),
            language=_language(results, task),
            qa_mode=qa_mode,
        )
        if "run" in sample:
            row["run"] = str(sample["run"])
        if with_prompt:
            row["prompt"] = str(sample.get("prompt", ""))
        for dimension, level in levels.get((task, template), {}).items():
            row[f"level.{dimension}"] = level
        yield row


def checked_rows(run: Path, *, with_prompt: bool = False) -> list[dict[str, Any]]:
    """`table_rows`, all of them, checked against results.json: every template's items
    are there (a samples.jsonl that lost lines would export fewer rows than the statistics
    were made from, and an EEE aggregate that disagrees with its own instances)."""
    results, samples_path = read_run(run)
    rows = list(table_rows(run, with_prompt=with_prompt))
    items: dict[tuple[str, str, str, str], set[str]] = {}
    for row in rows:
        key = (row["model"], row["task"], row["decoding"], row["template"])
        items.setdefault(key, set()).add(row["item"])
    for model, model_result in results.models.items():
        for task, task_result in model_result.tasks.items():
            for decoding, dec in task_result.decodings.items():
                for template, result in dec.templates.items():
                    found = len(items.get((model, task, decoding, template), ()))
                    if found != result.n:
                        raise HakariInputError(
                            f"has {found} rows of model {model!r}, task {task!r}, {decoding}, "
                            f"template {template!r}, where results.json counts {result.n} "
                            "items: lines lost or added? An export must hold the items its "
                            "statistics were made from",
                            file=str(samples_path),
                            field="RUN",
                        )
    return rows


def _scores(sample: dict[str, Any]) -> dict[str, Any]:
    """The per-item scores a sample carries (a source's, or `hakari score`'s)."""
    scores = sample.get("scores")
    return scores if isinstance(scores, dict) else {}


def _levels(results: EvalResults) -> dict[tuple[str, str], dict[str, str]]:
    out: dict[tuple[str, str], dict[str, str]] = {}
    for model in results.models.values():
        for task, task_result in model.tasks.items():
            for dec in task_result.decodings.values():
                for tid, template in dec.templates.items():
                    if template.levels:
                        out[(task, tid)] = dict(template.levels)
    return out


def _first_item_score(
    names: list[str], sample: dict[str, Any], scores: dict[str, Any], language: str, qa_mode: str
) -> float | None:
    for name in names:
        if name.startswith(SCORE_PREFIX):
            value = scores.get(name[len(SCORE_PREFIX) :])
            return float(value) if isinstance(value, int | float) else None
        metric = corpus.get(name)
        if not metric.per_item or sample.get("gold") is None:
            continue
        options = (
            {"lang": language, "nfkc": qa_mode == "first-line"}
            if name in ("exact_match", "f1")
            else {}
        )
        values = corpus.per_item_scores(name, [sample.get("answer")], [sample["gold"]], **options)
        return None if values is None else float(values[0])
    return None


def export_table(run: Path, output: Path) -> int:
    """Write the run's long table to `output` (its suffix says the format); returns rows."""
    suffix = output.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise HakariInputError(
            f"a table is written as {', '.join(TABLE_SUFFIXES)} (by the suffix)", field="--output"
        )
    out = check_output(Output(output, "--output"), inputs=[run / RESULTS_FILE, run / SAMPLES_FILE])
    rows = checked_rows(run)
    columns = list(dict.fromkeys(k for row in rows for k in row))
    if suffix == ".jsonl":
        with atomic_open(out) as fh:
            for row in rows:
                fh.write(json_line(row))
    elif suffix == ".csv":
        with atomic_open(out) as fh:
            fh.write(_csv_text(rows, columns))
    else:
        _write_parquet(out, rows, columns)
    return len(rows)


def _csv_text(rows: list[dict[str, Any]], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_value(c, row.get(c)) for c in columns])
    return buffer.getvalue()


def _csv_value(column: str, value: Any) -> str:
    """A cell's text; text cells escaped against spreadsheet formulas as in every CSV
    hakari writes (`hakari._util.spreadsheet`, undone by `hakari import table`)."""
    if column in ("answer", "gold"):
        text = csv_cell(value)
        return escape_cell(text) if isinstance(value, str | list) else text
    if isinstance(value, str):
        return str(escape_cell(value))
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _write_parquet(out: Output, rows: list[dict[str, Any]], columns: list[str]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise HakariInputError(
            "writing Parquet needs pyarrow: pip install 'hakari[interop]' (or pyarrow)",
            field="--output",
        ) from None
    data = {
        c: [
            csv_cell(r[c]) if c in ("answer", "gold") and r.get(c) is not None else r.get(c)
            for r in rows
        ]
        for c in columns
    }
    table = pa.table(data)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    with atomic_open(out, "wb") as fh:
        fh.write(sink.getvalue())


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)

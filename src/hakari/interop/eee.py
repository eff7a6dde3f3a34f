"""`hakari import eee`: Every Eval Ever (schema 0.3.0) instance-level records.

The instance records (`*_samples.jsonl`) are read; aggregate records beside them give the
producer (`eval_library`). Records hakari wrote (`interop.eee_export`) are read back
exactly, from their `hakari.*` metadata. Others (a converter's output for lm-eval, inspect
or HELM logs) have no template axis: their `evaluation_name` is mapped to task and
template by `--templates` / `--task` (`interop.mapping`), the item is `sample_id`, the
score `evaluation.score` (the metric's name: `--score`, default `score`), the answer the
last `answer_attribution`'s `extracted_value`, the gold `input.reference`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hakari._util.jsonl import iter_jsonl
from hakari.errors import HakariInputError
from hakari.interop.cells import Cell, ImportedGrid, MetricSpec, Origin, item_id, label, score_value
from hakari.interop.eee_export import META, SCHEMA_VERSION
from hakari.interop.mapping import TaskMapping
from hakari.interop.options import ImportOptions, Reading, expand, listed_metrics, read_json


# ------------------------------------------------------------------ import
def read(paths: list[Path], options: ImportOptions) -> Reading:
    files = expand(paths, ["*_samples.jsonl", "*.json"], "Every Eval Ever records")
    reading = Reading(ImportedGrid())
    instance_files = [f for f in files if f.name.endswith(".jsonl")]
    for path in files:
        if path.suffix == ".json":
            _aggregate_file(path, reading)
    if not instance_files:
        raise HakariInputError(
            "no instance-level records (*_samples.jsonl): the aggregate records alone have no "
            "per-item scores",
            field="PATH",
        )
    mapping = TaskMapping(options.templates, options.task)
    names: list[str] = []
    pending: Pending = {}
    for path in instance_files:
        reading.files.append(path)
        for line, record in iter_jsonl(path, field="PATH"):
            origin = Origin(str(path), line)
            _instance_cell(record, origin, options, mapping, names, reading.grid, pending)
    if names:
        mapping.check_matched(names)
        reading.notes += mapping.notes()
    _add_pending(pending, options, reading)
    return reading


def _aggregate_file(path: Path, reading: Reading) -> None:
    data = read_json(path)
    where = Origin(str(path), 1)
    if not isinstance(data, dict) or "evaluation_results" not in data:
        raise where.error("not an Every Eval Ever aggregate record (no evaluation_results)")
    _check_version(data, where)
    library = data.get("eval_library")
    if isinstance(library, dict) and isinstance(library.get("name"), str):
        reading.producers[str(library["name"])] = str(library.get("version", "unknown"))
    reading.producers["every_eval_ever schema"] = str(data["schema_version"])
    reading.files.append(path)


def _check_version(data: dict[str, Any], where: Origin) -> None:
    version = data.get("schema_version")
    if not isinstance(version, str):
        raise where.error("missing field 'schema_version'", "schema_version")
    if version.split(".")[:2] != SCHEMA_VERSION.split(".")[:2]:
        raise where.error(
            f"schema_version {version!r} is not one this hakari reads ({SCHEMA_VERSION})",
            "schema_version",
        )


def _need(record: dict[str, Any], path: str, origin: Origin) -> Any:
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise origin.error(f"missing field {path!r}", path)
        value = value[part]
    return value


Pending = dict[tuple[str, str, str, str, str], tuple[Cell, dict[str, Origin]]]


def _instance_cell(
    record: dict[str, Any],
    origin: Origin,
    options: ImportOptions,
    mapping: TaskMapping,
    names: list[str],
    grid: ImportedGrid,
    pending: Pending,
) -> None:
    _check_version(record, origin)
    found = record.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    if f"{META}template" in meta:
        _hakari_cell(record, meta, origin, options, grid)
        return
    name = label(_need(record, "evaluation_name", origin), origin, "evaluation_name")
    names.append(name)
    mapped = mapping(name)
    if mapped is None:
        return
    model = options.model or label(_need(record, "model_id", origin), origin, "model_id")
    item = item_id(_need(record, "sample_id", origin), origin, "sample_id")
    # one record a sample *and a metric* (`evaluation_result_id`): merged into one cell
    metric = str(record.get("evaluation_result_id") or "score")
    if options.scores and metric not in options.scores:
        return
    decoding = options.decoding or "imported"
    key = (model, mapped.task, decoding, mapped.template, item)
    cell, seen = pending.get(key) or (Cell({}, origin), {})
    if metric in seen:
        raise origin.error(
            f"duplicate item {item!r} of {name!r} for {metric!r} (first at line "
            f"{seen[metric].line} of {seen[metric].file}): each cell must appear once",
            "sample_id",
        )
    seen[metric] = origin
    cell.scores[metric] = score_value(
        _need(record, "evaluation.score", origin), origin, "evaluation.score"
    )
    if key not in pending:
        _texts(cell, record)
        pending[key] = (cell, seen)


def _texts(cell: Cell, record: dict[str, Any]) -> None:
    reference = record.get("input", {}).get("reference")
    if isinstance(reference, list) and reference:
        cell.gold = reference[0] if len(reference) == 1 else [str(r) for r in reference]
    attributions = record.get("answer_attribution")
    if isinstance(attributions, list) and attributions and isinstance(attributions[-1], dict):
        cell.answer = attributions[-1].get("extracted_value")
    output = record.get("output")
    if isinstance(output, dict) and isinstance(output.get("raw"), list) and output["raw"]:
        cell.output = str(output["raw"][0])
    inputs = record.get("input", {})
    cell.prompt = str(inputs.get("formatted") or inputs.get("raw") or "")


def _add_pending(pending: Pending, options: ImportOptions, reading: Reading) -> None:
    """The merged cells of other producers' records; a task's metrics are the metrics its
    records name, in the order first seen (or `--score`'s). A template whose records are
    a copy of another's (lm-eval's group record) is left out, said in a note."""
    grid = reading.grid
    per_task: dict[str, dict[str, None]] = {}
    for (_, task, _, _, _), (cell, _) in pending.items():
        per_task.setdefault(task, {}).update(dict.fromkeys(cell.scores))
    copies = _group_copies(pending)
    for (model, task, template), of in sorted(copies.items()):
        reading.notes.append(
            f"{template!r} (model {model}, task {task}) left out: its records are a copy of "
            f"{of!r}'s (lm-eval's group record as Every Eval Ever's converter writes it)"
        )
    for (model, task, decoding, template, item), (cell, _) in pending.items():
        if (model, task, template) in copies:
            continue
        keys = list(options.scores) if options.scores else list(per_task[task])
        info = grid.task(task, [MetricSpec(k) for k in keys], cell.origin)
        info.language = options.language or info.language
        info.qa_mode = options.qa_mode
        grid.add((model, task, decoding), template, item, cell)


def _group_copies(pending: Pending) -> dict[tuple[str, str, str], str]:
    """(model, task, template) -> the template it copies: a template whose name begins
    another's and whose records (item, prompt, answer, scores) are that one's exactly, as
    the converter writes an lm-eval group (`demo` beside `demo_0-1`, `demo_0-2`...)."""
    signatures: dict[tuple[str, str, str], list[tuple[Any, ...]]] = {}
    for (model, task, _, template, item), (cell, _) in pending.items():
        signatures.setdefault((model, task, template), []).append(
            (item, cell.prompt, repr(cell.answer), sorted(cell.scores.items()))
        )
    by_content: dict[tuple[str, str, str], list[str]] = {}
    for (model, task, template), rows in signatures.items():
        by_content.setdefault((model, task, repr(sorted(rows))), []).append(template)
    copies = {}
    for (model, task, _), templates in by_content.items():
        for template in templates:
            longer = [t for t in templates if t != template and t.startswith(template)]
            if longer:
                copies[(model, task, template)] = longer[0]
    return copies


def _hakari_cell(
    record: dict[str, Any],
    meta: dict[str, Any],
    origin: Origin,
    options: ImportOptions,
    grid: ImportedGrid,
) -> None:
    """A record hakari exported: every field read back as it was written."""

    def decoded(name: str) -> Any:
        try:
            return json.loads(meta.get(f"{META}{name}", "null"))
        except json.JSONDecodeError:
            raise origin.error(
                f"metadata {META}{name} is not JSON", f"metadata.{META}{name}"
            ) from None

    task = label(_need(record, "evaluation_name", origin), origin, "evaluation_name")
    metrics = (
        options.metric_specs(())
        if (options.metrics or options.scores)
        else listed_metrics(meta.get(f"{META}metrics", ""), origin, f"metadata.{META}metrics")
    )
    info = grid.task(task, metrics, origin)
    info.language = options.language or meta.get(f"{META}language", "en")
    info.qa_mode = meta.get(f"{META}qa_mode", options.qa_mode)
    model = options.model or str(meta.get(f"{META}model") or _need(record, "model_id", origin))
    item = item_id(meta.get(f"{META}item", record.get("sample_id")), origin, "sample_id")
    sources = decoded("scores") or {}
    scores = {
        m.key: score_value(sources.get(m.key), origin, f"metadata.{META}scores.{m.key}")
        for m in metrics
        if not m.from_answers
    }
    cell = Cell(scores, origin, answer=decoded("answer"), gold=decoded("gold"))
    cell.extra["fallback"] = meta.get(f"{META}fallback") == "true"
    inputs = record.get("input", {})
    cell.prompt = str(inputs.get("raw", "")) if isinstance(inputs, dict) else ""
    output = record.get("output")
    if isinstance(output, dict) and isinstance(output.get("raw"), list) and output["raw"]:
        cell.output = str(output["raw"][0])
    levels = {
        k[len(META) + 6 :]: str(v) for k, v in meta.items() if k.startswith(f"{META}level.")
    } or None
    run = meta.get(f"{META}run")
    if run is not None and options.run is not None and run != options.run:
        return
    decoding = str(meta.get(f"{META}decoding", options.decoding or "imported"))
    for rank, ranks, name in (
        ("model_rank", grid.model_rank, model),
        ("task_rank", grid.task_rank, task),
    ):
        value = meta.get(f"{META}{rank}")
        if isinstance(value, str) and value.isdigit():
            ranks.setdefault(name, int(value))
    grid.add(
        (model, task, decoding), str(meta[f"{META}template"]), item, cell, levels=levels, run=run
    )


def iter_records(folder: Path) -> Iterator[Path]:
    """Every record file under an export (for validators)."""
    yield from sorted(folder.rglob("*.json"))
    yield from sorted(folder.rglob("*_samples.jsonl"))

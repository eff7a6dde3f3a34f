"""`hakari import grid`: complete template × item grids in the JSON format of
`../shared/real-grids` and `tests/fixtures/grids` (one model × task × decoding a file,
`.json` or `.json.gz`), with the template bank's levels.

A grid has `model`, `task`, `decoding`, `kind`, `template_ids`, `metrics`, `language` and,
by kind: `score` — `item_scores[METRIC]`, a templates × items matrix of per-item scores
(scored as their mean, like any source's per-item score); `label` — `answers` (templates ×
items codes), `golds` (item codes) and `labels` (the codes' names), scored by the task's
registered metrics (accuracy, MCC) from the answers; `number` — `answers` and `golds` as
numbers (Pearson, Spearman). Items have no ids in this format: they are their positions.

Levels: a folder that holds `qwen-template-bank.json` beside its grids (or `--levels
FILE`, the same format) gives each template, in grid order, its level on every dimension
(the level's index in the bank, as text: the bank has the texts), which feed the
per-dimension attribution as a native prompt space's levels do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hakari.errors import HakariInputError
from hakari.interop.cells import Cell, ImportedGrid, MetricSpec, Origin, score_value
from hakari.interop.options import ImportOptions, Reading, expand, read_json

TEMPLATE_BANK = "qwen-template-bank.json"
KINDS = ("score", "label", "number")


def read(paths: list[Path], options: ImportOptions) -> Reading:
    files = expand(paths, ["*.json.gz", "*.json"], "grid files")
    files = [f for f in files if f.name != TEMPLATE_BANK]
    bank_file = options.levels
    if bank_file is None:
        beside = {f.parent / TEMPLATE_BANK for f in files}
        found = [b for b in beside if b.is_file()]
        bank_file = found[0] if len(found) == 1 else None
    bank = _bank(bank_file) if bank_file is not None else None
    reading = Reading(ImportedGrid(), files=[*files, *([bank_file] if bank_file else [])])
    for path in files:
        _read_grid(path, read_json(path), bank, reading.grid, options)
    if bank_file is not None:
        reading.notes.append(f"template levels from {bank_file}")
    return reading


def _bank(path: Path) -> list[dict[str, str]]:
    data = read_json(path)
    where = Origin(str(path), 1)
    if not isinstance(data, dict) or not isinstance(data.get("templates"), list):
        raise where.error("a template bank needs a list 'templates'", "templates")
    dimensions = data.get("dimensions")
    if not isinstance(dimensions, list) or not all(isinstance(d, str) for d in dimensions):
        raise where.error("a template bank needs 'dimensions', a list of names", "dimensions")
    out = []
    for k, template in enumerate(data["templates"]):
        if not isinstance(template, dict) or any(d not in template for d in dimensions):
            raise where.error(
                f"template #{k} does not give a level on every dimension", "templates"
            )
        out.append({d: str(template[d]) for d in dimensions})
    return out


def _field(data: dict[str, Any], name: str, kind: type | tuple[type, ...], where: Origin) -> Any:
    if name not in data:
        raise where.error(f"missing field {name!r}", name)
    value = data[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise where.error(f"field {name!r} has the wrong type ({type(value).__name__})", name)
    return value


def _read_grid(
    path: Path,
    data: Any,
    bank: list[dict[str, str]] | None,
    grid: ImportedGrid,
    options: ImportOptions,
) -> None:
    where = Origin(str(path), 1)
    if not isinstance(data, dict):
        raise where.error("a grid is a JSON object")
    model = options.model or _field(data, "model", str, where)
    task = options.task or _field(data, "task", str, where)
    decoding = options.decoding or _field(data, "decoding", str, where)
    kind = _field(data, "kind", str, where)
    if kind not in KINDS:
        raise where.error(f"unknown kind {kind!r} (one of {', '.join(KINDS)})", "kind")
    template_ids = [str(t) for t in _field(data, "template_ids", list, where)]
    if len(set(template_ids)) != len(template_ids):
        raise where.error("template_ids has a duplicate", "template_ids")
    metrics = [str(m) for m in _field(data, "metrics", list, where)]
    language = data.get("language", "en")
    if bank is not None and len(bank) != len(template_ids):
        raise where.error(
            f"{len(template_ids)} templates, but the template bank has {len(bank)}", "template_ids"
        )
    specs = (
        [MetricSpec(m) for m in metrics] if kind == "score" else [MetricSpec(m, m) for m in metrics]
    )
    info = grid.task(task, specs, where)
    info.language = language if language in ("en", "ja") else "en"
    key = (model, task, decoding)
    if kind == "score":
        scores = _field(data, "item_scores", dict, where)
        matrices = {
            m: _matrix(scores.get(m), len(template_ids), f"item_scores.{m}", where) for m in metrics
        }
        n = len(next(iter(matrices.values()))[0]) if matrices else 0
        for t, template in enumerate(template_ids):
            levels = bank[t] if bank else None
            for i in range(n):
                values = {
                    m: score_value(matrices[m][t][i], where, f"item_scores.{m}") for m in metrics
                }
                grid.add(key, template, str(i), Cell(values, where), levels=levels)
        return
    answers = _matrix(data.get("answers"), len(template_ids), "answers", where)
    golds = _field(data, "golds", list, where)
    labels = data.get("labels") if kind == "label" else None
    if kind == "label" and (not isinstance(labels, list) or not labels):
        raise where.error("a label grid needs 'labels', the names of its codes", "labels")
    for t, template in enumerate(template_ids):
        levels = bank[t] if bank else None
        if len(answers[t]) != len(golds):
            raise where.error(
                f"answers of template {template!r} and golds differ in length", "answers"
            )
        for i, (answer, gold) in enumerate(zip(answers[t], golds, strict=True)):
            cell = Cell(
                {}, where, answer=_decode(answer, labels, where), gold=_decode(gold, labels, where)
            )
            grid.add(key, template, str(i), cell, levels=levels)


def _matrix(value: Any, rows: int, name: str, where: Origin) -> list[list[Any]]:
    if (
        not isinstance(value, list)
        or len(value) != rows
        or not all(isinstance(r, list) for r in value)
    ):
        raise where.error(f"{name} must be a list of {rows} rows (one per template)", name)
    widths = {len(r) for r in value}
    if len(widths) != 1:
        raise where.error(f"{name}: the templates' rows differ in length", name)
    return value


def _decode(value: Any, labels: list[Any] | None, where: Origin) -> Any:
    if labels is None:
        return score_value(value, where, "answers")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(labels):
        raise HakariInputError(
            f"{value!r:.20} is not a code of one of the {len(labels)} labels",
            file=where.file,
            field="answers",
        )
    return labels[value]

"""An imported grid → a normal run folder: results.json and samples.jsonl, published
together by the runner's own writer (`runner.rundir.RunWriter`: the folder's lock, both
files complete on disk before the first rename, a failure leaves the folder as it was).

Every command reading a run works on it unchanged: `hakari report` (terminal, Markdown,
HTML, CSV), `hakari score` (each sample has `prompt`, `output` and `gold`, empty where the
source had none) and the statistics. results.json adds `imported` (`ImportRecord`): the
source, each file with its sha256 and size, the producer versions, the mapping options,
every cell left out. Secrets are redacted as in a native run: results.json goes through
`EvalResults.file_text` (`hakari._util.redact`), and the arguments recorded from a log
(lm-eval's `model_args`, an inspect log's `model_args`) through `redact_tree` when read.

A sample's `index` is the item's position in the task's canonical item order (the same for
every model, so reports line the models' answers up); `item` keeps the source's own id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from hakari._util.atomic import check_output_folder
from hakari._util.infiles import open_input
from hakari.interop.cells import MISSING, ImportedGrid, item_order
from hakari.interop.finish import Finished, Settings, finish, publish_into
from hakari.results import (
    EvalResults,
    ImportRecord,
    RunConfig,
    SourceFile,
    library_versions,
)
from hakari.runner.rundir import RunWriter

HASH_BLOCK = 1 << 20


def file_record(path: Path) -> SourceFile:
    """A file read by an import: its path, sha256 and size (read in blocks)."""
    digest = hashlib.sha256()
    size = 0
    with open_input(path) as fh:
        for block in iter(lambda: fh.read(HASH_BLOCK), b""):
            digest.update(block)
            size += len(block)
    return SourceFile(path=str(path), sha256=digest.hexdigest(), bytes=size)


def import_results(
    grid: ImportedGrid,
    record: ImportRecord,
    settings: Settings,
    argv: list[str] | None = None,
) -> tuple[EvalResults, Finished]:
    """The results.json of `grid` (nothing written)."""
    finished = finish(grid, settings)
    tasks = [t for t in grid.task_names() if t in grid.tasks]
    decodings = list(dict.fromkeys(d for (_, _, d) in grid.keys()))
    qa_modes = {info.qa_mode for info in grid.tasks.values()}
    results = EvalResults(
        config=RunConfig(
            models=list(finished.models),
            tasks=tasks,
            decodings=decodings,
            templates="all",
            seed=settings.seed,
            alpha=settings.alpha,
            std="population (ddof=0) across templates",
            qa_mode=qa_modes.pop() if len(qa_modes) == 1 else None,  # type: ignore[arg-type]
            n_boot=settings.n_boot,
            argv=argv,
            started=datetime.now().isoformat(timespec="seconds"),
        ),
        versions=library_versions(),
    )
    record.dropped = finished.dropped
    record.notes = [*record.notes, *finished.notes]
    results.imported = record
    publish_into(results, finished)
    return results, finished


def write_run(
    grid: ImportedGrid,
    record: ImportRecord,
    settings: Settings,
    output: Path,
    argv: list[str] | None = None,
) -> tuple[Path, EvalResults]:
    """Take the folder's lock (as `hakari run` does: a second import, run or score of
    the folder meanwhile is refused), compute, then publish results.json and
    samples.jsonl into `output` together."""
    check_output_folder(output, "--output")
    created = not output.exists()
    writer = RunWriter(
        output, created=created, recovery="nothing was lost: run the same import again"
    )
    try:
        results, _ = import_results(grid, record, settings, argv)
        for sample in samples(grid):
            writer.write_sample(sample)
    except BaseException:
        writer.discard()
        raise
    return writer.publish(results), results


def samples(grid: ImportedGrid) -> Iterable[dict[str, Any]]:
    """One samples.jsonl line per cell (per run of a cell), model by model."""
    index = {
        task: {item: k for k, item in enumerate(item_order(_items(grid, task)))}
        for task in grid.tasks
    }
    for model, task, decoding in grid.keys():
        per_template = grid.cells[(model, task, decoding)]
        for template in grid.tasks[task].templates:
            per_item = per_template.get(template)
            if per_item is None:
                continue
            for item in item_order(per_item):
                for cell in per_item[item]:
                    gold = cell.gold if cell.gold is not MISSING else grid.gold(task, item)
                    record: dict[str, Any] = {
                        "model": model,
                        "task": task,
                        "decoding": decoding,
                        "template_id": template,
                        "index": index[task][item],
                        "item": item,
                        "prompt": cell.prompt if cell.prompt is not None else "",
                        "output": cell.output if cell.output is not None else "",
                        "answer": cell.answer,
                        "fallback": bool(cell.extra.get("fallback", False)),
                        "gold": gold,
                    }
                    if cell.scores:
                        record["scores"] = dict(cell.scores)
                    record.update({k: v for k, v in cell.extra.items() if k != "fallback"})
                    yield record


def _items(grid: ImportedGrid, task: str) -> list[str]:
    return [
        item
        for (_, t, _), per_template in grid.cells.items()
        if t == task
        for per_item in per_template.values()
        for item in per_item
    ]

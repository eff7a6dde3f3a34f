"""`hakari import` and `hakari export` as functions without a console (the CLI calls these;
so can Python): read a source into a run folder, write a run out as a table or as Every
Eval Ever records.

The order is always: options checked → every input read and checked (one
`HakariInputError` naming file, line and field for the first problem) → statistics →
the run folder published whole. Nothing is written when any input is bad.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

from hakari._util.atomic import check_output_folder
from hakari._util.checks import bootstrap_replicates, choice, fits_in_memory, number, seed
from hakari._util.infiles import read_input_text
from hakari._util.outputs import RESULTS_FILE
from hakari.errors import HakariInputError
from hakari.interop.caveats import template_set_notes
from hakari.interop.finish import Settings
from hakari.interop.options import SOURCES, ImportOptions, Reading
from hakari.interop.scale import apply_scale
from hakari.results import EvalResults, ImportRecord

READERS = {
    "lm-eval": "hakari.interop.lmeval",
    "inspect": "hakari.interop.inspect_logs",
    "eee": "hakari.interop.eee",
    "table": "hakari.interop.table",
    "grid": "hakari.interop.grid",
}


def check_settings(settings: Settings) -> None:
    number(settings.alpha, "--alpha", low=0.0)
    bootstrap_replicates(settings.n_boot, "--n-boot")
    seed(settings.seed)


def read_source(source: str, paths: list[Path], options: ImportOptions) -> Reading:
    """Every input of `source` read into one grid (nothing computed, nothing written)."""
    choice(source, "SOURCE", SOURCES)
    if not paths:
        raise HakariInputError("give at least one file or folder", field="PATH")
    options.check()
    reader = importlib.import_module(READERS[source])
    reading: Reading = reader.read(paths, options)
    if not reading.grid.cells:
        raise HakariInputError(
            f"no cells were read from {', '.join(map(str, paths))}", field="PATH"
        )
    reading.grid.check_levels()
    reading.notes += reading.grid.notes()
    reading.notes += template_set_notes(reading.grid)
    reading.notes += apply_scale(reading.grid, options.score_range)
    return reading


def import_run(
    source: str,
    paths: list[Path],
    output: Path,
    options: ImportOptions | None = None,
    settings: Settings | None = None,
    argv: list[str] | None = None,
) -> tuple[Path, EvalResults]:
    """Read `paths` as `source` and publish a run folder at `output`; returns the
    results.json written and its results."""
    from hakari.interop.publish import file_record, write_run

    options = options or ImportOptions()
    settings = settings or Settings()
    check_settings(settings)
    check_import_output(output, paths)
    reading = read_source(source, paths, options)
    check_grid_size(reading, settings.n_boot)
    check_bootstrap_memory(reading, settings.n_boot)
    record = ImportRecord(
        source=source,
        files=[file_record(p) for p in reading.files],
        producers=reading.producers,
        options=options.recorded() | ({"fill": True} if settings.fill else {}),
        notes=reading.notes,
    )
    return write_run(reading.grid, record, settings, output, argv)


def check_grid_size(reading: Reading, n_boot: int) -> None:
    """The stated bounds, before any statistic: at most `MAX_TEMPLATES` templates a task
    (a run's bound on a prompt space's: 100,000 templates of 2 items ran past 55 s at
    1.1 GB) and at most `MAX_COMPARED_MODELS` models a task × decoding compared pairwise
    (their pairs grow as K²)."""
    from hakari.runner.estimators import check_compared_models
    from hakari.tasks.spacesample import check_template_count

    models: dict[tuple[str, str], int] = {}
    for (_, task, decoding), per_template in reading.grid.cells.items():
        check_template_count(len(per_template), task=repr(task), file=None, field="PATH")
        models[(task, decoding)] = models.get((task, decoding), 0) + 1
    for (task, decoding), count in models.items():
        check_compared_models(count, n_boot, "PATH", f" of task {task!r}, {decoding}")


def check_bootstrap_memory(reading: Reading, n_boot: int) -> None:
    """`--n-boot` against the memory its replicates will hold, by the rule `hakari run`
    uses (`aggregate.bootstrap_bytes`: every model's replicates of every metric are kept
    for the paired comparisons), before any statistic."""
    if n_boot == 0:
        return
    from hakari.aggregate import bootstrap_bytes

    grid = reading.grid
    sizes = [
        (len(grid.tasks[task].metrics), len(per_template))
        for (_, task, _), per_template in grid.cells.items()
    ]
    kept = sum(metrics * templates for metrics, templates in sizes)
    widest = max(templates for _, templates in sizes)
    needed = bootstrap_bytes(n_boot, kept_templates=kept, widest=widest)
    fits_in_memory(needed, "--n-boot", n_boot, "the bootstrap replicates")


def check_import_output(output: Path, paths: list[Path]) -> None:
    """`--output` is a new folder or an earlier import: never one of the inputs, never
    inside an input folder (a rerun would read the run as input), never a native run
    (importing over it would lose its answers)."""
    check_output_folder(output, "--output", inputs=[p for p in paths if p.is_dir()])
    where = Path(os.path.realpath(output))
    for given in paths:
        if given.is_dir() and Path(os.path.realpath(given)) in where.parents:
            raise HakariInputError(
                f"lies inside the input folder {given}: a rerun would read the run as input; "
                "choose a folder outside it",
                file=str(output),
                field="--output",
            )
    results = output / RESULTS_FILE
    if results.is_file() and not _is_import(results):
        raise HakariInputError(
            "holds a run that was not imported (its results.json has no 'imported'): "
            "importing over it would lose its answers; choose another folder",
            file=str(output),
            field="--output",
        )


def _is_import(results: Path) -> bool:
    try:
        return "imported" in json.loads(read_input_text(results))
    except (OSError, ValueError, TypeError):
        return False


def export_run(run: Path, format: str, output: Path) -> str:
    """Write run folder `run` as `format` ("table": one file; "eee": a folder of Every
    Eval Ever records); returns what was written, in words."""
    from hakari.interop.export import FORMATS, export_table

    choice(format, "--format", FORMATS)
    if format == "table":
        return f"{export_table(run, output)} rows in {output}"
    from hakari.interop.eee_export import export_eee

    files = export_eee(run, output)
    return f"{len(files)} files under {output}"

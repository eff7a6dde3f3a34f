"""`hakari import` (another tool's per-sample outputs → a run folder) and `hakari export`
(a run → a long table or Every Eval Ever records). The work is `hakari.interop.api`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from hakari.cli.common import console, fail, recorded_argv, split_csv
from hakari.cli.options import grouped, option_group
from hakari.errors import HakariInputError

Opt = typer.Option
MAPPING = "Mapping the source"
STATISTICS = "Statistics"


@option_group
class Mapping:
    """How the source maps onto hakari's tasks, templates, items and metrics."""

    templates: Annotated[
        str | None,
        Opt(
            "--templates",
            help="Pattern over the source's task names naming the template (and the task), "
            "e.g. 'noreval_{task}_p{template}'; inspect: arg:NAME or metadata:NAME.",
            rich_help_panel=MAPPING,
        ),
    ] = None
    task: Annotated[
        str | None,
        Opt("--task", help="The hakari task the templates belong to.", rich_help_panel=MAPPING),
    ] = None
    group: Annotated[
        str | None,
        Opt(
            "--group",
            help="lm-eval: a group whose subtasks are the templates.",
            rich_help_panel=MAPPING,
        ),
    ] = None
    metric: Annotated[
        list[str] | None,
        Opt(
            "--metric",
            help="Corpus metrics computed from answers and golds (accuracy,mcc,...).",
            rich_help_panel=MAPPING,
        ),
    ] = None
    score: Annotated[
        list[str] | None,
        Opt(
            "--score",
            help="The source's per-item scores used as metrics (acc,acc_norm; a scorer; a column).",
            rich_help_panel=MAPPING,
        ),
    ] = None
    lm_filter: Annotated[
        str | None,
        Opt("--filter", help="lm-eval: the filter whose values are read.", rich_help_panel=MAPPING),
    ] = None
    model: Annotated[
        str | None,
        Opt("--model", help="The model's name where the source has none.", rich_help_panel=MAPPING),
    ] = None
    decoding: Annotated[
        str | None,
        Opt(
            "--decoding",
            help="The decoding's name (default: the source's).",
            rich_help_panel=MAPPING,
        ),
    ] = None
    language: Annotated[
        str | None,
        Opt("--language", help="en or ja (EM/F1 normalisation).", rich_help_panel=MAPPING),
    ] = None
    qa_mode: Annotated[
        str,
        Opt("--qa-mode", help="EM/F1 golds: first-line (NFKC) or paper.", rich_help_panel=MAPPING),
    ] = "first-line"
    column: Annotated[
        list[str] | None,
        Opt(
            "--column", help="table: ROLE=NAME, a column of another name.", rich_help_panel=MAPPING
        ),
    ] = None
    run: Annotated[
        str | None,
        Opt("--run", help="table: keep only this run of each cell.", rich_help_panel=MAPPING),
    ] = None
    score_range: Annotated[
        str | None,
        Opt(
            "--score-range",
            help="LO:HI, the range of the source's per-item scores when not [0, 1] (e.g. "
            "0:100): rescaled to [0, 1] for the Sharpe score, recorded.",
            rich_help_panel=MAPPING,
        ),
    ] = None
    levels: Annotated[
        Path | None,
        Opt(
            "--levels",
            help="grid: a template bank giving each template's levels.",
            rich_help_panel=MAPPING,
        ),
    ] = None


@option_group
class Statistics:
    """How the numbers are made (the defaults of `hakari run`)."""

    fill: Annotated[
        bool,
        Opt(
            "--fill",
            help="Estimate missing cells (the budget estimator; every number marked "
            "estimated) instead of dropping the items some template lacks.",
            rich_help_panel=STATISTICS,
        ),
    ] = False
    alpha: Annotated[
        float, Opt("--alpha", help="Sharpe score alpha.", rich_help_panel=STATISTICS)
    ] = 1.0
    n_boot: Annotated[
        int,
        Opt("--n-boot", help="Bootstrap replicates (0: no intervals).", rich_help_panel=STATISTICS),
    ] = 1000
    seed: Annotated[int, Opt("--seed", help="Bootstrap seed.", rich_help_panel=STATISTICS)] = 0


@grouped
def import_(
    *,
    source: Annotated[str, typer.Argument(help="lm-eval, inspect, eee, table or grid.")],
    paths: Annotated[
        list[Path], typer.Argument(help="Files or folders (searched for the source's files).")
    ],
    output: Annotated[Path, Opt("--output", "-o", help="The run folder to write.")],
    mapping: Mapping,
    statistics: Statistics,
) -> None:
    """Import another tool's per-sample results into a run folder (report, score, compare)."""
    from hakari.interop.api import import_run
    from hakari.interop.finish import Settings
    from hakari.interop.options import ImportOptions
    from hakari.interop.scale import parse_range

    try:
        options = ImportOptions(
            templates=mapping.templates,
            task=mapping.task,
            group=mapping.group,
            metrics=tuple(split_csv(mapping.metric)),
            scores=tuple(split_csv(mapping.score)),
            lm_filter=mapping.lm_filter,
            model=mapping.model,
            decoding=mapping.decoding,
            language=mapping.language,  # type: ignore[arg-type]
            qa_mode=mapping.qa_mode,
            columns=_columns(mapping.column),
            run=mapping.run,
            levels=mapping.levels,
            score_range=parse_range(mapping.score_range),
        )
        settings = Settings(
            alpha=statistics.alpha,
            n_boot=statistics.n_boot,
            seed=statistics.seed,
            fill=statistics.fill,
        )
        path, results = import_run(source, paths, output, options, settings, recorded_argv())
    except HakariInputError as exc:
        fail(exc)
    _print_summary(source, path, results)


def _print_summary(source: str, path: Path, results: Any) -> None:
    record = results.imported
    cells = sum(
        t.n
        for m in results.models.values()
        for task_result in m.tasks.values()
        for dec in task_result.decodings.values()
        for t in dec.templates.values()
    )
    console.print(
        Text(
            f"imported {source}: {len(record.files)} file(s), {len(results.models)} model(s), "
            f"{len(results.config.tasks or [])} task(s), {cells} scored cells"
        )
    )
    for dropped in record.dropped:
        how = (
            "filled (estimated)"
            if dropped.filled
            else f"{len(dropped.dropped_items)} item(s) dropped"
        )
        console.print(
            Text(
                f"{dropped.model} · {dropped.task} · {dropped.decoding}: "
                f"{dropped.missing_cells} missing cell(s), {how}"
            )
        )
    from hakari.reports.rows import undefined_notes

    for note in [*record.notes, *undefined_notes(results)]:
        console.print(Text(f"note: {note}"))
    console.print(Text(f"results: {path}"))
    console.print(Text(f"next: hakari report {path.parent}"))


def _columns(values: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in split_csv(values):
        role, sep, name = value.partition("=")
        if not sep or not role.strip() or not name.strip():
            raise HakariInputError(f"{value!r} is not ROLE=NAME", field="--column")
        out[role.strip()] = name.strip()
    return out


def export(
    run: Annotated[Path, typer.Argument(help="A finished run folder.")],
    format: Annotated[str, Opt("--format", help="table or eee.")],
    output: Annotated[
        Path,
        Opt("--output", "-o", help="table: a .csv, .jsonl or .parquet file; eee: a folder."),
    ],
) -> None:
    """Write a run as a long table or as Every Eval Ever records."""
    from hakari.interop.api import export_run

    try:
        written = export_run(run, format, output)
    except HakariInputError as exc:
        fail(exc)
    console.print(Text(f"exported {run} as {format}: {written}"))

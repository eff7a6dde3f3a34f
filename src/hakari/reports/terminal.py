"""The terminal view of `EvalResults`: rich tables per model × task × decoding, the
alpha-sweep rankings and the paired differences. Every cell is a `Text` (never markup)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.box import SIMPLE_HEAD
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hakari.reports.labels import label_key, model_labels
from hakari.reports.leaderboards import leaderboard_sections
from hakari.reports.rows import (
    BASELINE_NOTE,
    COMPACT_SUMMARY_HEADER,
    ESTIMATED_NOTE,
    GROUP_HEADER,
    LEVEL_HEADER,
    NEGATIVE_MEAN_NOTE,
    PAIRED_HEADER,
    SPACE_HEADER,
    SPACE_NOTE,
    estimate_note,
    group_note,
    group_sections,
    group_title,
    has_caveat,
    has_estimates,
    meta_skipped,
    meta_tables,
    paired_rows,
    run_notes,
    section_baselines,
    space_sections,
    summary_by_section,
    table_rows,
)
from hakari.reports.tables import ranks
from hakari.reports.verdict import verdict_lines
from hakari.results import DecodingResult, EvalResults, TaskResult


def print_report(results: EvalResults, console: Console | None = None) -> None:
    """A finished run again: every model × task's tables, the α sweep, the paired
    differences, the corrected groups, the task families, then what `hakari run` ends
    with: the summary, the verdict and the warnings."""
    console = console or Console()
    for model, mres in results.models.items():
        for task_name, tres in mres.tasks.items():
            print_task(model, task_name, tres, console)
    if results.alpha_sweep:
        print_alpha_sweep(results, console)
    if results.paired:
        print_paired(results, console)
    print_groups(results, console)
    print_families(results, console)
    print_leaderboards(results, console)
    print_summary(results, console)


def print_leaderboards(results: EvalResults, console: Console) -> None:
    """A family's leaderboard view, one table per model × decoding
    (`reports.leaderboards`)."""
    for section in leaderboard_sections(results):
        table = Table(title=Text(section.title), title_justify="left")
        for i, col in enumerate(section.header):
            table.add_column(col, justify="left" if i < 2 else "right")
        for row in section.rows:
            table.add_row(*map(Text, row))
        console.print(table)
        console.print(Text(section.note, "dim"))


def print_families(results: EvalResults, console: Console) -> None:
    """Task families pooled over their members: the mean over questions (every question
    weighs the same) and the mean over subjects (every subject weighs the same)."""
    for family, per_model in (results.families or {}).items():
        table = Table(title=Text(f"{family}: all subjects pooled"), title_justify="left")
        for col in ("model", "decoding", "metric", "pooled", "mean", "std", "sharpe", "min–max"):
            table.add_column(col, justify="left" if col in ("model", "decoding") else "right")
        n_members = n_questions = 0
        for model, per_decoding in per_model.items():
            for decoding, per_metric in per_decoding.items():
                for metric, fam in per_metric.items():
                    n_members, n_questions = len(fam.members), fam.n_questions
                    for label, sc in (
                        ("over questions", fam.over_questions),
                        ("over subjects", fam.over_subjects),
                    ):
                        table.add_row(
                            *map(
                                Text,
                                (model, decoding, metric, label, f"{sc.mean:.3f}", f"{sc.std:.3f}",
                                 f"{sc.sharpe:.3f}", f"{sc.min:.3f}–{sc.max:.3f}"),
                            )
                        )  # fmt: skip
        console.print(table)
        console.print(
            Text(
                f"{n_members} subjects, {n_questions} questions. Over questions: every question "
                "weighs the same; over subjects: the mean of the subjects' scores. Each per "
                "template, then over the templates.",
                "dim",
            )
        )


def print_space(title: str, dec: DecodingResult, console: Console) -> None:
    """The per-dimension table and the percentiles of a prompt space."""
    for section in space_sections(dec):
        console.print(Text(f"{section.metric}: {section.percentiles}"))
        what = f"{title} · {section.metric}"
        for header, rows, left, caption in (
            (SPACE_HEADER, section.dimensions, (0, 3, 4), "what each dimension does"),
            (LEVEL_HEADER, section.levels, (0, 1, 4), "each level's mean"),
        ):
            table = Table(title=Text(f"{what} · {caption}"))
            for i, name in enumerate(header):
                table.add_column(name, justify="left" if i in left else "right")
            for row in rows:
                table.add_row(*map(Text, row))
            console.print(table)
        console.print(Text(SPACE_NOTE, "dim"))


def print_task(model: str, task_name: str, tres: TaskResult, console: Console) -> None:
    """One model × task: a table per decoding (templates, baselines, spread, Sharpe)."""
    for note in tres.notes:
        console.print(Text(f"note: {note}", "yellow"))
    for decoding, dec in tres.decodings.items():
        print_decoding(f"{model} · {task_name} · {decoding}", tres, dec, console)


def print_decoding(title: str, tres: TaskResult, dec: DecodingResult, console: Console) -> None:
    if dec.skipped:
        console.print(Text(f"{title}: skipped ({dec.skipped})", style="dim"))
        return
    table = Table(title=Text(title), title_justify="left")
    table.add_column("template")
    for m in tres.metrics:
        table.add_column(m, justify="right")
    table.add_column("fallback", justify="right")
    table.add_column("n", justify="right")
    rows = list(table_rows(tres, dec))
    n_templates = len(dec.templates)
    for i, row in enumerate(rows):
        table.add_row(*map(Text, row), end_section=i == n_templates - 1)
    console.print(table)
    print_space(title, dec, console)
    note = estimate_note(dec)
    if note is not None:
        console.print(Text(note))
    if has_caveat(dec):
        console.print(NEGATIVE_MEAN_NOTE, markup=False)
    console.print(
        Text(f"{dec.generated} generated, {dec.cached} from cache, {dec.wall_s:.1f} s", "dim")
    )
    if dec.refusals:
        console.print(
            Text(
                f"{dec.refusals} refusals: the server gave no text for these prompts "
                "however often asked; scored as the fallback, not cached",
                "yellow",
            )
        )


def print_summary(results: EvalResults, console: Console) -> None:
    """The run's result, one table per task × decoding that fits 80 columns (a model's
    label, then a row per metric: mean, std, Sharpe with its interval, min–max, fallback
    rate; the baselines beneath; a long model spec shortened to a label, the full spec
    listed after the tables), then the verdict paragraph and the warnings
    (`reports.verdict`)."""
    sections = summary_by_section(results)
    models = [row[0] for rows in sections.values() for row in rows]
    labels = model_labels(models, _label_width(sections, console.width))
    for (task_name, decoding), rows in sections.items():
        table = Table(
            title=Text(f"summary · {task_name} · {decoding}"),
            title_justify="left",
            box=SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        table.add_column("model", overflow="fold", ratio=1)
        for name in COMPACT_SUMMARY_HEADER[2:]:  # the numbers never wrap
            table.add_column(name, justify="right", no_wrap=True)
        shown = None
        for model, metric, *numbers in rows:
            if model != shown:
                table.add_row(Text(labels[model], "bold"), *("" for _ in numbers))
                shown = model
            table.add_row(Text("  " + metric), *map(Text, numbers))
        console.print(table)
        for line in section_baselines(results, task_name):
            console.print(Text(line, "dim"))
    for line in label_key(labels):
        console.print(Text(f"  {line}", "dim"))
    console.print(Text(BASELINE_NOTE, "dim"))
    for note in run_notes(results):
        console.print(Text(note))
    if has_estimates(results):
        console.print(Text(ESTIMATED_NOTE, "dim"))
    for line in verdict_lines(results):
        style = "bold yellow" if line.startswith("warning:") else "bold"
        console.print(Text(line, style))


def _label_width(sections: dict[tuple[str, str], list[list[str]]], width: int) -> int:
    """What the summary's first column has left beside its numbers (each column as wide
    as its widest cell, a space on either side; the table's two edges)."""
    numbers = [row[2:] for rows in sections.values() for row in rows]
    header = COMPACT_SUMMARY_HEADER[2:]
    used = sum(
        max(len(cell) for cell in [name, *(row[i] for row in numbers)]) + 2
        for i, name in enumerate(header)
    )
    return width - used - 2


def print_groups(results: EvalResults, console: Console) -> None:
    for task_name, decoding, metric, groups, rows in group_sections(results):
        table = Table(
            title=Text(group_title(task_name, decoding, metric, groups)), title_justify="left"
        )
        for i, name in enumerate(GROUP_HEADER):
            table.add_column(name, justify="right" if i >= 2 else "left")
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)
        console.print(Text(group_note(groups)))


def print_alpha_sweep(results: EvalResults, console: Console) -> None:
    assert results.alpha_sweep is not None
    for task_name, per_dec in results.alpha_sweep.items():
        for decoding, per_metric in per_dec.items():
            for metric, sweep in per_metric.items():
                table = Table(
                    title=Text(f"ranking by Sharpe score · {task_name} · {decoding} · {metric}"),
                    title_justify="left",
                )
                table.add_column("α", justify="right")
                models = sweep[0].ranking if sweep else []
                for place in range(len(models)):
                    table.add_column(f"place {place + 1}")
                for point in sweep:
                    if round(point.alpha * 10) % 5 != 0:
                        continue  # every 0.5 in the terminal; the JSON has every 0.1
                    rank = ranks(dict(point.scores))  # tied models share a rank
                    table.add_row(
                        f"{point.alpha:.1f}",
                        *(Text(f"#{rank[m]} {m} ({point.scores[m]:.3f})") for m in point.ranking),
                    )
                console.print(table)


def print_paired(results: EvalResults, console: Console) -> None:
    tables: dict[tuple[str, str], Table] = {}
    for task_name, decoding, cells in paired_rows(results):
        if (task_name, decoding) not in tables:
            table = Table(
                title=Text(f"paired differences A − B · {task_name} · {decoding}"),
                title_justify="left",
            )
            for i, name in enumerate(PAIRED_HEADER):
                table.add_column(name, justify="right" if i >= 3 else "left")
            tables[(task_name, decoding)] = table
        tables[(task_name, decoding)].add_row(*(Text(cell) for cell in cells))
    for table in tables.values():
        console.print(table)


def print_meta(path: Path, meta: Mapping[str, Any], console: Console) -> None:
    """A `hakari meta --json` file: its tables (`rows.meta_tables`) under its name."""
    console.print(Text(f"meta-evaluation: {path}", style="bold"))
    for title, header, rows in meta_tables(meta):
        table = Table(title=Text(title), title_justify="left")
        for i, name in enumerate(header):
            table.add_column(Text(name), overflow="fold" if i == 0 else "ellipsis")
        for row in rows:
            table.add_row(*map(Text, row))
        console.print(table)
    for line in meta_skipped(meta):
        console.print(Text(line, style="dim"))

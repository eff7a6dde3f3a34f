"""Human-readable views of `EvalResults`: rich tables for the terminal and Markdown.

One table per model × task × decoding: templates as rows, the task's metrics and the
fallback rate as columns, then the chance-rate row and mean / std / min / max / Sharpe
(with its bootstrap CI).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from hakari.results import DecodingResult, EvalResults, TaskResult


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


NEGATIVE_MEAN_MARK = " †"
NEGATIVE_MEAN_NOTE = (
    "† mean < 0: eq. 1 rewards spread here (a larger std brings a negative Sharpe score "
    "closer to 0); compare such models by mean and std, not by Sharpe."
)


def _sharpe(stats: dict[str, Any]) -> str:
    """The Sharpe score, marked when its aggregate carries the negative-mean caveat."""
    mark = NEGATIVE_MEAN_MARK if stats.get("sharpe_caveat") == "negative_mean" else ""
    return _fmt(stats.get("sharpe")) + mark


def _has_caveat(dec: DecodingResult) -> bool:
    return any(a.get("sharpe_caveat") == "negative_mean" for a in dec.aggregate.values())


def _ci(stats: dict[str, Any], low: str, high: str) -> str:
    if stats.get(low) is None or stats.get(high) is None:
        return ""
    return f" [{stats[low]:.3f}, {stats[high]:.3f}]"


def _table_rows(task: TaskResult, dec: DecodingResult) -> Iterator[list[str]]:
    metrics = task.metrics
    for template_id, tr in dec.templates.items():
        yield [
            template_id,
            *(_fmt(tr.metrics.get(m)) for m in metrics),
            f"{tr.fallback_rate:.1%}",
            str(tr.n),
        ]
    if task.chance:
        yield ["chance", *(_fmt(task.chance.get(m)) for m in metrics), "", ""]
    for key in ("mean", "std", "min", "max"):
        yield [key, *(_fmt(dec.aggregate.get(m, {}).get(key)) for m in metrics), "", ""]
    first = dec.aggregate.get(metrics[0], {}) if metrics else {}
    alpha = first.get("alpha", 1.0)
    yield [
        f"sharpe (α={alpha:g})",
        *(_sharpe(dec.aggregate.get(m, {})) for m in metrics),
        "",
        "",
    ]
    if any(dec.aggregate.get(m, {}).get("ci_low") is not None for m in metrics):
        yield [
            "mean 95% CI",
            *(_ci(dec.aggregate.get(m, {}), "ci_low", "ci_high").strip() for m in metrics),
            "",
            "",
        ]
        yield [
            "sharpe 95% CI",
            *(
                _ci(dec.aggregate.get(m, {}), "sharpe_ci_low", "sharpe_ci_high").strip()
                for m in metrics
            ),
            "",
            "",
        ]


def _sections(results: EvalResults) -> Iterator[tuple[str, TaskResult, DecodingResult]]:
    for model, mres in results.models.items():
        for task_name, tres in mres.tasks.items():
            for decoding, dec in tres.decodings.items():
                title = f"{model} · {task_name} · {decoding}"
                yield title, tres, dec


def print_report(results: EvalResults, console: Console | None = None) -> None:
    console = console or Console()
    for title, tres, dec in _sections(results):
        if dec.skipped:
            console.print(Text(f"{title}: skipped ({dec.skipped})", style="dim"))
            continue
        table = Table(title=Text(title), title_justify="left")
        table.add_column("template")
        for m in tres.metrics:
            table.add_column(m, justify="right")
        table.add_column("fallback", justify="right")
        table.add_column("n", justify="right")
        rows = list(_table_rows(tres, dec))
        n_templates = len(dec.templates)
        for i, row in enumerate(rows):
            table.add_row(*map(Text, row), end_section=i == n_templates - 1)
        console.print(table)
        if _has_caveat(dec):
            console.print(NEGATIVE_MEAN_NOTE, markup=False)
        console.print(
            Text(f"{dec.generated} generated, {dec.cached} from cache, {dec.wall_s:.1f} s", "dim")
        )
    if results.alpha_sweep:
        print_alpha_sweep(results, console)
    if results.paired:
        print_paired(results, console)


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
                models = sweep[0]["ranking"] if sweep else []
                for rank in range(len(models)):
                    table.add_column(f"#{rank + 1}")
                for point in sweep:
                    if round(point["alpha"] * 10) % 5 != 0:
                        continue  # every 0.5 in the terminal; the JSON has every 0.1
                    table.add_row(
                        f"{point['alpha']:.1f}",
                        *(Text(f"{m} ({point['scores'][m]:.3f})") for m in point["ranking"]),
                    )
                console.print(table)


PAIRED_HEADER = [
    "A",
    "B",
    "metric",
    "Δ mean (95% CI)",
    "Δ Sharpe (95% CI)",
    "p (Sharpe)",
    "verdict",
]
VERDICT_TEXT = {"a_better": "A better", "b_better": "B better", "inconclusive": "inconclusive"}


def _diff(stat: dict[str, Any]) -> str:
    return f"{stat['diff']:+.3f} [{stat['ci_low']:+.3f}, {stat['ci_high']:+.3f}]"


def paired_rows(results: EvalResults) -> Iterator[tuple[str, str, list[str]]]:
    """(task, decoding, cells) per paired comparison: A − B on the same templates and
    instances; the verdict reads the Sharpe difference's CI."""
    for task_name, per_dec in (results.paired or {}).items():
        for decoding, comparisons in per_dec.items():
            for c in comparisons:
                yield (
                    task_name,
                    decoding,
                    [
                        str(c["model_a"]),
                        str(c["model_b"]),
                        str(c["metric"]),
                        _diff(c["mean"]),
                        _diff(c["sharpe"]),
                        f"{c['sharpe']['p_value']:.3f}",
                        VERDICT_TEXT.get(c["sharpe"]["verdict"], str(c["sharpe"]["verdict"])),
                    ],
                )


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


def summary_rows(results: EvalResults) -> Iterator[list[str]]:
    """One row per model × task × decoding × metric: the numbers a paper table needs."""
    for model, mres in results.models.items():
        for task_name, tres in mres.tasks.items():
            for decoding, dec in tres.decodings.items():
                if dec.skipped or not dec.templates:
                    continue
                fallback = sum(t.fallback_rate for t in dec.templates.values()) / len(dec.templates)
                for metric in tres.metrics:
                    a = dec.aggregate.get(metric, {})
                    yield [
                        model,
                        task_name,
                        decoding,
                        metric,
                        _fmt(a.get("mean")),
                        _fmt(a.get("std")),
                        _sharpe(a) + _ci(a, "sharpe_ci_low", "sharpe_ci_high"),
                        _fmt(a.get("min")) + "–" + _fmt(a.get("max")),
                        _fmt(tres.chance.get(metric)),
                        f"{fallback:.1%}",
                    ]


SUMMARY_HEADER = [
    "model",
    "task",
    "decoding",
    "metric",
    "mean",
    "std",
    "Sharpe (95% CI)",
    "min–max",
    "chance",
    "fallback",
]


def md_cell(value: object) -> str:
    """One Markdown table cell or heading from any text: HTML is escaped (`<`, `>`, `&`),
    `|` cannot end the cell, backticks and other inline markup are shown as they are,
    and a newline cannot end the row."""
    text = html.escape(str(value), quote=False)
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text)


# Backslash, backtick, pipe, emphasis, link brackets, strikethrough; `_` only where it
# could start or end emphasis (not inside a word such as demo_sentiment_en).
_MD_SPECIAL = re.compile(r"[\\`*|\[\]~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def _md_command(config: dict[str, Any]) -> list[str]:
    """The command that made the run, in a code block: a fence longer than any run of
    backticks in it, so no argument can close it (nothing inside is read as Markdown)."""
    from hakari.reports.page import run_command

    if not config:
        return []
    command, recorded = run_command(config)
    runs = [len(m) for m in re.findall(r"`+", command)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    how = "" if recorded else " (rebuilt from the run's config)"
    return [f"Command{how}:\n", f"{fence}text", " ".join(command.splitlines()), fence, ""]


def markdown_report(results: EvalResults) -> str:
    """The report as Markdown: every cell and heading escaped (model names, task names and
    template ids are user text)."""
    lines: list[str] = [*_md_command(results.config), "### Summary\n"]
    lines.append(_md_row(SUMMARY_HEADER))
    lines.append("|" + "|".join("---" for _ in SUMMARY_HEADER) + "|")
    rows = list(summary_rows(results))
    lines.extend(_md_row(row) for row in rows)
    lines.append("")
    if any(NEGATIVE_MEAN_MARK in row[6] for row in rows):
        lines.append(NEGATIVE_MEAN_NOTE + "\n")
    for title, tres, dec in _sections(results):
        lines.append(f"### {md_cell(title)}\n")
        if dec.skipped:
            lines.append(f"skipped: {md_cell(dec.skipped)}\n")
            continue
        header = ["template", *tres.metrics, "fallback", "n"]
        lines.append(_md_row(header))
        lines.append("|" + "|".join("---" for _ in header) + "|")
        for row in _table_rows(tres, dec):
            lines.append(_md_row(row))
        lines.append("")
        if _has_caveat(dec):
            lines.append(NEGATIVE_MEAN_NOTE + "\n")
    if results.alpha_sweep:
        for task_name, per_dec in results.alpha_sweep.items():
            for decoding, per_metric in per_dec.items():
                for metric, sweep in per_metric.items():
                    heading = f"Ranking by Sharpe score · {task_name} · {decoding} · {metric}"
                    lines.append(f"### {md_cell(heading)}\n")
                    lines.append("| α | ranking (score) |")
                    lines.append("|---|---|")
                    for point in sweep:
                        ranked = ", ".join(
                            f"{m} ({point['scores'][m]:.3f})" for m in point["ranking"]
                        )
                        lines.append(_md_row([f"{point['alpha']:.1f}", ranked]))
                    lines.append("")
    current = None
    for task_name, decoding, cells in paired_rows(results):
        if (task_name, decoding) != current:
            if current is not None:
                lines.append("")
            current = (task_name, decoding)
            heading = f"Paired differences A − B · {task_name} · {decoding}"
            lines.append(
                f"### {md_cell(heading)}\n\n"
                "Same resampled templates × instances for both models; the verdict reads "
                "the Sharpe difference's 95% CI.\n"
            )
            lines.append(_md_row(PAIRED_HEADER))
            lines.append("|" + "|".join("---" for _ in PAIRED_HEADER) + "|")
        lines.append(_md_row(cells))
    if current is not None:
        lines.append("")
    return "\n".join(lines)

"""The Markdown view of `EvalResults` (`hakari report --markdown`): the command in a
fence no argument can close, a summary table first, then the tables of the terminal view.
Every cell and heading is escaped: model names, task names and template ids are user text."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hakari.reports.leaderboards import leaderboard_sections
from hakari.reports.rows import (
    BASELINE_NOTE,
    ESTIMATED_NOTE,
    GROUP_HEADER,
    LEVEL_HEADER,
    NEGATIVE_MEAN_MARK,
    NEGATIVE_MEAN_NOTE,
    PAIRED_HEADER,
    SPACE_HEADER,
    SPACE_NOTE,
    SUMMARY_HEADER,
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
    sections,
    space_sections,
    summary_rows,
    table_rows,
)
from hakari.reports.verdict import verdict_lines
from hakari.reports.views import run_command
from hakari.results import DecodingResult, EvalResults, RunConfig


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


def _md_command(config: RunConfig) -> list[str]:
    """The command that made the run, in a code block: a fence longer than any run of
    backticks in it, so no argument can close it (nothing inside is read as Markdown)."""
    if not config.recorded():
        return []
    command, recorded = run_command(config)
    runs = [len(m) for m in re.findall(r"`+", command)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    how = "" if recorded else " (rebuilt from the run's config)"
    return [f"Command{how}:\n", f"{fence}text", " ".join(command.splitlines()), fence, ""]


def _md_space(dec: DecodingResult) -> list[str]:
    lines: list[str] = []
    for section in space_sections(dec):
        lines.append(f"{md_cell(section.metric)}: {md_cell(section.percentiles)}\n")
        for header, rows in ((SPACE_HEADER, section.dimensions), (LEVEL_HEADER, section.levels)):
            lines.append(_md_row(header))
            lines.append("|" + "|".join("---" for _ in header) + "|")
            lines.extend(_md_row(row) for row in rows)
            lines.append("")
        lines.append(SPACE_NOTE + "\n")
    return lines


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
    if has_estimates(results):
        lines.append(ESTIMATED_NOTE + "\n")
    lines.append(BASELINE_NOTE + "\n")
    lines.extend(f"- {md_cell(note)}" for note in run_notes(results))
    verdict = verdict_lines(results)
    if verdict:
        lines.extend(f"- {md_cell(line)}" for line in verdict)
        lines.append("")
    for section in leaderboard_sections(results):
        lines.append(f"### {md_cell(section.title)}\n")
        lines.append(_md_row(section.header))
        lines.append("|" + "|".join("---" for _ in section.header) + "|")
        lines.extend(_md_row(row) for row in section.rows)
        lines.append("\n" + md_cell(section.note) + "\n")
    for title, tres, dec in sections(results):
        lines.append(f"### {md_cell(title)}\n")
        if dec.skipped:
            lines.append(f"skipped: {md_cell(dec.skipped)}\n")
            continue
        header = ["template", *tres.metrics, "fallback", "n"]
        lines.append(_md_row(header))
        lines.append("|" + "|".join("---" for _ in header) + "|")
        for row in table_rows(tres, dec):
            lines.append(_md_row(row))
        lines.append("")
        lines.extend(_md_space(dec))
        if dec.refusals:
            lines.append(
                f"{dec.refusals} refusals: the server gave no text for these prompts however "
                "often asked (scored as the fallback).\n"
            )
        note = estimate_note(dec)
        if note is not None:
            lines.append(md_cell(note) + "\n")
        if has_caveat(dec):
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
                        ranked = ", ".join(f"{m} ({point.scores[m]:.3f})" for m in point.ranking)
                        lines.append(_md_row([f"{point.alpha:.1f}", ranked]))
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
    for task_name, decoding, metric, groups, group_rows in group_sections(results):
        lines.append(f"### {md_cell(group_title(task_name, decoding, metric, groups))}\n")
        lines.append(md_cell(group_note(groups)) + "\n")
        lines.append(_md_row(GROUP_HEADER))
        lines.append("|" + "|".join("---" for _ in GROUP_HEADER) + "|")
        lines.extend(_md_row(row) for row in group_rows)
        lines.append("")
    return "\n".join(lines)


def meta_markdown(path: Path, meta: Mapping[str, Any]) -> str:
    """A `hakari meta --json` file as Markdown: its tables (`rows.meta_tables`), every cell
    escaped (metric names come from the user's file)."""
    lines = [f"### Meta-evaluation · {md_cell(path.name)}\n"]
    for title, header, rows in meta_tables(meta):
        lines.append(f"#### {md_cell(title)}\n")
        lines.append(_md_row(header))
        lines.append("|" + "|".join("---" for _ in header) + "|")
        lines.extend(_md_row(row) for row in rows)
        lines.append("")
    lines.extend(f"{md_cell(line)}\n" for line in meta_skipped(meta))
    return "\n".join(lines)

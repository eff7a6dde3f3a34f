"""The printed form of a meta-evaluation: one rich table per level, then CAT/CIT/TFA.

Metric names come from the user's file and enter rich as `Text`, so `[bold]` in a field
name is printed as text, never read as markup, whether or not the console reads markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from hakari.meta.correlation import STATS


def _fmt(entry: dict[str, Any]) -> Text | str:
    value = entry.get("value")
    if value is None:
        return "undefined"
    low, high = entry.get("ci_low"), entry.get("ci_high")
    ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return Text(f"{value:.3f}{ci}")


def print_meta(result: dict[str, Any], console: Console) -> None:
    for level, metrics in result["levels"].items():
        table = Table(title=f"{level} level (95% bootstrap CI)", title_justify="left")
        table.add_column("metric", overflow="fold")
        for stat in STATS:
            table.add_column(stat)
        table.add_column("n", justify="right")
        table.add_column("notes")
        for name, entry in metrics.items():
            notes = []
            if entry.get("undefined"):
                notes.append(entry["undefined"])
            if entry.get("n_missing"):
                notes.append(f"{entry['n_missing']} NaN rows left out")
            if entry.get("n_undefined_groups"):
                notes.append(f"{entry['n_undefined_groups']} groups undefined")
            table.add_row(
                Text(name),
                *(_fmt(entry[s]) for s in STATS),
                str(entry["n"]),
                Text("; ".join(notes)),
            )
        console.print(table)
    for level, why in result.get("skipped_levels", {}).items():
        console.print(Text(f"{level}: skipped ({why})"), highlight=False)
    block = result.get("ifteval")
    if block:
        table = Table(title="IFTEval (units: system × group means)", title_justify="left")
        table.add_column("metric", overflow="fold")
        for col in ("CAT", "CIT", "CIT groups undefined"):
            table.add_column(col)
        if "TFA" in block:
            table.add_column(Text(f"TFA {block['TFA']['before']} → {block['TFA']['after']}"))
        for name in block["CAT"]:
            cat, cit = block["CAT"][name]["value"], block["CIT"][name]["value"]
            row: list[Text | str] = [
                Text(name),
                "undefined" if cat is None else f"{cat:.3f}",
                "undefined" if cit is None else f"{cit:.3f}",
                str(len(block["CIT"][name]["undefined_groups"])),
            ]
            if "TFA" in block:
                row.append(_pct(block["TFA"]["columns"][name]["value"]))
            table.add_row(*row)
        if "TFA" in block:
            human = block["TFA"]["columns"]["human"]["value"]
            table.add_row("human", "", "", "", _pct(human))
        console.print(table)


def _pct(value: float | None) -> str:
    return "undefined" if value is None else f"{value * 100:+.1f}%"

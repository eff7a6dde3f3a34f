"""`hakari report`: finished runs shown again without any model (terminal tables,
Markdown, one self-contained HTML page, CSVs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hakari.cli.common import console, fail, write_output
from hakari.errors import HakariInputError


def report(
    inputs: Annotated[
        list[Path],
        typer.Argument(help="Run folders, results.json files or `hakari meta --json` files."),
    ],
    markdown: Annotated[bool, typer.Option("--markdown", help="Print Markdown.")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write one self-contained HTML page here.")
    ] = None,
    csv_dir: Annotated[
        Path | None, typer.Option("--csv", help="Write summary/templates/alpha-sweep CSVs here.")
    ] = None,
    samples: Annotated[
        int, typer.Option("--samples", min=0, help="HTML: first N instances per template.")
    ] = 3,
    title: Annotated[str, typer.Option("--title", help="HTML: page title.")] = "hakari report",
) -> None:
    """Show finished runs again without any model: tables, Markdown, HTML, CSV."""
    try:
        _report(inputs, markdown=markdown, html=html, csv_dir=csv_dir, samples=samples, title=title)
    except HakariInputError as exc:
        fail(exc)


def _report(
    inputs: list[Path],
    *,
    markdown: bool,
    html: Path | None,
    csv_dir: Path | None,
    samples: int,
    title: str,
) -> None:
    from hakari._util.atomic import check_output
    from hakari.reports.csv_export import csv_outputs
    from hakari.reports.inputs import input_files, load_inputs
    from hakari.reports.views import merged_results

    read = input_files(inputs)
    html_out = check_output(html, "--html", inputs=read) if html is not None else None
    if csv_dir is not None:
        csv_outputs(csv_dir, read)
    data = load_inputs(inputs)
    if html_out is not None:
        from hakari.reports.page import build_html

        write_output(html_out, build_html(data, samples_per_template=samples, title=title))
        for note in data.notes:
            console.print(f"note: {note}", highlight=False, markup=False)
        console.print(f"report: {html}", highlight=False, markup=False)
    if csv_dir is not None:
        from hakari.reports.csv_export import write_csv

        paths = write_csv(data, csv_dir, read)
        console.print("csv: " + ", ".join(str(p) for p in paths), highlight=False, markup=False)
    if markdown:
        from hakari.reports.markdown import markdown_report, meta_markdown

        if data.runs:
            print(markdown_report(merged_results(data)))
        for path, meta in data.meta:
            print(meta_markdown(path, meta))
        return
    if html is not None or csv_dir is not None:
        return
    from hakari.reports.terminal import print_meta, print_report

    if data.runs:
        print_report(merged_results(data), console)
    for path, meta in data.meta:
        print_meta(path, meta, console)

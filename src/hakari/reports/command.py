"""`hakari report`: the terminal tables, Markdown, a self-contained HTML page and CSVs
from one or more finished runs, without any model."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from hakari.errors import HakariInputError
from hakari.reports.inputs import ReportData, load_inputs
from hakari.results import EvalResults


def merged_results(data: ReportData) -> EvalResults:
    """One EvalResults for the terminal and Markdown views of several runs."""
    if len(data.runs) == 1:
        return data.runs[0].results
    from hakari.reports.page import _sweep_panels, per_model

    first = data.runs[0].results
    merged = EvalResults(config=first.config, versions=first.versions, models=data.models)
    sweeps: dict[str, dict[str, dict[str, list[dict[str, object]]]]] = {}
    for task in data.tasks:
        for decoding in data.decodings(task):
            models = per_model(data, task, decoding)
            if len(models) < 2:
                continue
            metrics = next(iter(models.values()))[0].metrics
            for metric, sweep in _sweep_panels(models, metrics):
                sweeps.setdefault(task, {}).setdefault(decoding, {})[metric] = sweep
    merged.alpha_sweep = sweeps or None
    return merged


def write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise HakariInputError(f"cannot write: {exc.strerror or exc}", file=str(path)) from exc


def report_command(
    inputs: list[Path],
    *,
    markdown: bool,
    html: Path | None,
    csv_dir: Path | None,
    samples: int,
    title: str,
    console: Console,
) -> None:
    from hakari.reports.terminal import markdown_report, print_report

    data = load_inputs(inputs)
    if html is not None:
        from hakari.reports.page import build_html

        write_text(html, build_html(data, samples_per_template=samples, title=title))
        console.print(f"report: {html}", highlight=False, markup=False)
    if csv_dir is not None:
        from hakari.reports.csv_export import write_csv

        try:
            paths = write_csv(data, csv_dir)
        except OSError as exc:
            raise HakariInputError(f"cannot write: {exc}", file=str(csv_dir)) from exc
        console.print("csv: " + ", ".join(str(p) for p in paths), highlight=False, markup=False)
    if not data.runs:
        return
    if markdown:
        print(markdown_report(merged_results(data)))
    elif html is None and csv_dir is None:
        print_report(merged_results(data), console)

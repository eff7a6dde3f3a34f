"""CSV exports of a report, for spreadsheets and plotting scripts:

* `summary.csv`: one row per model × task × decoding × metric (the leaderboard numbers);
* `templates.csv`: one row per model × task × decoding × template × metric;
* `alpha_sweep.csv`: Sharpe score and rank of every model for α = 0.0, 0.1, …, 2.0.

Text cells that a spreadsheet would run as a formula (starting with = + - @ or a tab)
get a leading apostrophe, by the one rule of every CSV hakari writes
(`hakari._util.spreadsheet`): model names and template ids are untrusted input.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hakari._util.atomic import Output, atomic_open, check_output, check_output_folder
from hakari._util.spreadsheet import escape_cell
from hakari.reports.inputs import ReportData
from hakari.reports.tables import mean_fallback, ranks
from hakari.reports.views import per_model, sweep_panels
from hakari.results.stats import AggregateStats

CSV_FILES = ("summary.csv", "templates.csv", "alpha_sweep.csv")
SUMMARY_COLUMNS = [
    "model", "task", "decoding", "metric", "mean", "ci_low", "ci_high", "std", "std_ci_low",
    "std_ci_high", "sharpe", "sharpe_ci_low", "sharpe_ci_high", "alpha", "min", "max",
    "rank_by_mean", "rank_by_sharpe", "chance", "fallback_rate", "n_templates", "ci_method",
]  # fmt: skip


def _statistics(s: AggregateStats | None) -> list[float | None]:
    """The columns `mean` to `max` of summary.csv."""
    if s is None:
        return [None] * 12
    return [
        s.mean, s.ci_low, s.ci_high, s.std, s.std_ci_low, s.std_ci_high,
        s.sharpe, s.sharpe_ci_low, s.sharpe_ci_high, s.alpha, s.min, s.max,
    ]  # fmt: skip


def _write(path: Output, header: list[str], rows: list[list[Any]]) -> None:
    with atomic_open(path) as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows([[escape_cell(v) for v in row] for row in rows])


def csv_outputs(out_dir: Path, inputs: Sequence[Path] = ()) -> list[Output]:
    """The three files `write_csv` writes into `out_dir`, checked (`check_output`)."""
    check_output_folder(out_dir, "--csv")
    return [
        check_output(out_dir / name, "--csv", inputs=inputs, in_given_folder=True)
        for name in CSV_FILES
    ]


def write_csv(data: ReportData, out_dir: Path, inputs: Sequence[Path] = ()) -> list[Path]:
    """Write the CSVs (each whole or not at all); `inputs`: the files the report read,
    never written over."""
    outputs = csv_outputs(out_dir, inputs)
    summary: list[list[Any]] = []
    templates: list[list[Any]] = []
    sweep_rows: list[list[Any]] = []
    for task in data.tasks:
        for decoding in data.decodings(task):
            models = per_model(data, task, decoding)
            if not models:
                continue
            metrics = next(iter(models.values()))[0].metrics
            for metric in metrics:
                stats = {m: dec.aggregate.get(metric) for m, (_, dec) in models.items()}
                by_mean = ranks({m: s.mean if s else None for m, s in stats.items()})
                by_sharpe = ranks({m: s.sharpe if s else None for m, s in stats.items()})
                for model, (tres, dec) in models.items():
                    s = stats[model]
                    summary.append(
                        [
                            model,
                            task,
                            decoding,
                            metric,
                            *_statistics(s),
                            by_mean[model],
                            by_sharpe[model],
                            tres.chance.get(metric),
                            mean_fallback(dec),
                            len(dec.templates),
                            s.ci_method if s else None,
                        ]
                    )
                    for template_id, tr in dec.templates.items():
                        value = tr.metrics.get(metric)
                        templates.append(
                            [
                                model,
                                task,
                                decoding,
                                template_id,
                                metric,
                                value,
                                tr.fallback_rate if tr.n > 0 else None,  # never run
                                tr.n,
                            ]
                        )
            for metric, sweep in sweep_panels(models, metrics):
                for point in sweep:
                    sharpe = point.scores
                    rank = ranks(sharpe)
                    for model in point.ranking:
                        row = [task, decoding, metric, point.alpha, model, sharpe[model]]
                        sweep_rows.append([*row, rank[model]])
    _write(outputs[0], SUMMARY_COLUMNS, summary)
    _write(
        outputs[1],
        ["model", "task", "decoding", "template_id", "metric", "value", "fallback_rate", "n"],
        templates,
    )
    _write(
        outputs[2], ["task", "decoding", "metric", "alpha", "model", "sharpe", "rank"], sweep_rows
    )
    return [out.path for out in outputs]

"""What several views derive from the loaded runs, defined once: the command that made a
run, each model's results for one task × decoding, the alpha-sweep panels for several
models, and the runs merged into one `EvalResults` for the terminal and Markdown views."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from hakari.aggregate.sweep import AlphaSweepPoint, alpha_sweep
from hakari.reports.inputs import ReportData
from hakari.results import DecodingResult, EvalResults, RunConfig, TaskResult

PerModel = dict[str, tuple[TaskResult, DecodingResult]]


def _run_flags(config: RunConfig) -> list[tuple[str, str | float | list[str] | None]]:
    """The options `hakari run` takes, with the config's value for each."""
    return [
        ("--tasks", config.tasks),
        ("--templates", config.templates),
        ("--decoding", config.decodings),
        ("--limit", config.limit),
        ("--alpha", config.alpha),
        ("--n-boot", config.n_boot),
        ("--batch-size", config.batch_size),
        ("--prompt-format", config.prompt_format),
        ("--dtype", config.dtype),
        ("--device", config.device),
        ("--data-dir", config.data_dir),
    ]


def run_command(config: RunConfig) -> tuple[str, bool]:
    """The command that made a run: as recorded, else rebuilt from its config.
    Returns (command, recorded)."""
    if config.argv:
        return shlex.join(config.argv), True
    words = ["hakari", "run"]
    for model in config.models or []:
        words += ["--model", model]
    for flag, value in _run_flags(config):
        if value is None or value == "" or value == []:
            continue
        if isinstance(value, list):
            words += [flag, ",".join(value)]
        else:
            words += [flag, str(value)]
    return shlex.join(words), False


def per_model(data: ReportData, task: str, decoding: str) -> PerModel:
    out: PerModel = {}
    for label, m in data.models.items():
        t = m.tasks.get(task)
        d = t.decodings.get(decoding) if t else None
        if t is not None and d is not None and not d.skipped and d.templates:
            out[label] = (t, d)
    return out


def sweep_panels(
    models: PerModel, metrics: Sequence[str]
) -> list[tuple[str, list[AlphaSweepPoint]]]:
    panels = []
    for metric in metrics:
        stats = {
            label: (dec.aggregate[metric].mean, dec.aggregate[metric].std)
            for label, (_, dec) in models.items()
            if metric in dec.aggregate
        }
        if len(stats) > 1:
            panels.append((metric, alpha_sweep(stats)))
    return panels


def merged_results(data: ReportData) -> EvalResults:
    """One EvalResults for the terminal and Markdown views of several runs."""
    if len(data.runs) == 1:
        return data.runs[0].results
    first = data.runs[0].results
    merged = EvalResults(config=first.config, versions=first.versions, models=data.models)
    sweeps: dict[str, dict[str, dict[str, list[AlphaSweepPoint]]]] = {}
    for task in data.tasks:
        for decoding in data.decodings(task):
            models = per_model(data, task, decoding)
            if len(models) < 2:
                continue
            metrics = next(iter(models.values()))[0].metrics
            for metric, sweep in sweep_panels(models, metrics):
                sweeps.setdefault(task, {}).setdefault(decoding, {})[metric] = sweep
    merged.alpha_sweep = sweeps or None
    return merged

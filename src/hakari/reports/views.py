"""What several views derive from the loaded runs, defined once: the command that made a
run, each model's results for one task × decoding, the alpha-sweep panels for several
models, and the runs merged into one `EvalResults` for the terminal and Markdown views."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from hakari.aggregate.sweep import alpha_sweep
from hakari.reports.inputs import ReportData
from hakari.results import DecodingResult, EvalResults, TaskResult

PerModel = dict[str, tuple[TaskResult, DecodingResult]]

RUN_FLAGS = [
    ("models", "--model"),
    ("tasks", "--tasks"),
    ("templates", "--templates"),
    ("decodings", "--decoding"),
    ("limit", "--limit"),
    ("alpha", "--alpha"),
    ("n_boot", "--n-boot"),
    ("batch_size", "--batch-size"),
    ("prompt_format", "--prompt-format"),
    ("dtype", "--dtype"),
    ("device", "--device"),
    ("data_dir", "--data-dir"),
]


def run_command(config: Mapping[str, Any]) -> tuple[str, bool]:
    """The command that made a run: as recorded, else rebuilt from its config.
    Returns (command, recorded)."""
    for key in ("command", "argv"):
        value = config.get(key)
        if isinstance(value, list) and value:
            return shlex.join(str(v) for v in value), True
        if isinstance(value, str) and value:
            return value, True
    words = ["hakari", "run"]
    for key, flag in RUN_FLAGS:
        value = config.get(key)
        if value is None or value == "" or value == []:
            continue
        if key == "models" and isinstance(value, list):
            for m in value:
                words += [flag, str(m)]
        elif isinstance(value, list):
            words += [flag, ",".join(str(v) for v in value)]
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
) -> list[tuple[str, list[dict[str, Any]]]]:
    panels = []
    for metric in metrics:
        stats = {
            label: (float(dec.aggregate[metric]["mean"]), float(dec.aggregate[metric]["std"]))
            for label, (_, dec) in models.items()
            if metric in dec.aggregate and dec.aggregate[metric].get("mean") is not None
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
    sweeps: dict[str, dict[str, dict[str, list[dict[str, object]]]]] = {}
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

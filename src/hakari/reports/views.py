"""What several views derive from the loaded runs, defined once: the command that made a
run, each model's results for one task × decoding, the per-template panels and the
alpha-sweep panels of the charts, and the runs merged into one `EvalResults` for the
terminal and Markdown views."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from hakari.reports.inputs import ReportData
from hakari.results import DecodingResult, EvalResults, Leaderboard, RunConfig, TaskResult
from hakari.results.paired import ModelGroups, PairedComparison
from hakari.results.sweep import AlphaSweepPoint, alpha_sweep

PerModel = dict[str, tuple[TaskResult, DecodingResult]]
Comparison = TypeVar("Comparison", PairedComparison, ModelGroups)


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


@dataclass(frozen=True)
class TemplateSeries:
    """One model's per-template scores on one metric, in the panel's template order
    (None where the model has no score or no interval for a template)."""

    model: str
    scores: list[float | None]
    lows: list[float | None]
    highs: list[float | None]
    mean: float | None
    sharpe: float | None
    alpha: float | None


@dataclass(frozen=True)
class TemplatePanel:
    """One metric of a task × decoding: every model's template scores, and the chance
    rate (None when the models' chance rates differ, e.g. runs on other instances)."""

    metric: str
    templates: list[str]
    series: list[TemplateSeries]
    chance: float | None


def template_panels(
    models: PerModel, metrics: Sequence[str], templates: Sequence[str]
) -> list[TemplatePanel]:
    """What the per-template chart shows, one panel per metric with a score."""
    panels = []
    for metric in metrics:
        series = [
            _template_series(label, dec, metric, templates)
            for label, (_, dec) in models.items()
            if any(metric in r.metrics for r in dec.templates.values())
        ]
        if not series:
            continue
        chances = {task.chance.get(metric) for task, _ in models.values()}
        chance = chances.pop() if len(chances) == 1 else None
        panels.append(TemplatePanel(metric, list(templates), series, chance))
    return panels


def _template_series(
    label: str, dec: DecodingResult, metric: str, templates: Sequence[str]
) -> TemplateSeries:
    scores: list[float | None] = []
    lows: list[float | None] = []
    highs: list[float | None] = []
    for template_id in templates:
        result = dec.templates.get(template_id)
        scores.append(result.metrics.get(metric) if result else None)
        interval = (result.ci or {}).get(metric) if result else None
        estimated = (result.metrics_ci or {}).get(metric) if result else None
        if interval is not None:
            lows.append(interval.low)
            highs.append(interval.high)
        elif estimated is not None:  # a budgeted run: the full grid's interval
            lows.append(estimated[0])
            highs.append(estimated[1])
        else:
            lows.append(None)
            highs.append(None)
    stats = dec.aggregate.get(metric)
    return TemplateSeries(
        model=label,
        scores=scores,
        lows=lows,
        highs=highs,
        mean=stats.mean if stats else None,
        sharpe=stats.sharpe if stats else None,
        alpha=stats.alpha if stats else None,
    )


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


def _relabelled(item: Comparison, labels: dict[str, str]) -> Comparison:
    """A paired comparison or a model group with the report's labels for its models."""
    if isinstance(item, PairedComparison):
        names = {"model_a": item.model_a, "model_b": item.model_b}
        return item.model_copy(update={k: labels.get(v, v) for k, v in names.items()})
    tests = [
        t.model_copy(update={"model_a": labels.get(t.model_a, t.model_a),
                             "model_b": labels.get(t.model_b, t.model_b)})
        for t in item.tests
    ]  # fmt: skip
    return item.model_copy(
        update={
            "tests": tests,
            "scores": {labels.get(m, m): v for m, v in item.scores.items()},
            "groups": [[labels.get(m, m) for m in g] for g in item.groups],
        }
    )


def labelled_results(data: ReportData) -> EvalResults:
    """Every run's models under their report labels in one EvalResults, with the paired
    comparisons and model groups each run made, relabelled likewise (models of separate
    runs were never compared): what the verdict and the ranks read."""
    first = data.runs[0].results
    out = EvalResults(config=first.config, versions=first.versions, models=data.models)
    paired: dict[str, dict[str, list[PairedComparison]]] = {}
    groups: dict[str, dict[str, dict[str, ModelGroups]]] = {}
    for run in data.runs:
        for task, per_dec in (run.results.paired or {}).items():
            for decoding, items in per_dec.items():
                found = paired.setdefault(task, {}).setdefault(decoding, [])
                found += [_relabelled(item, run.labels) for item in items]
        for task, per_dec_groups in (run.results.model_groups or {}).items():
            for decoding, per_metric in per_dec_groups.items():
                for metric, cell in per_metric.items():
                    cells = groups.setdefault(task, {}).setdefault(decoding, {})
                    cells.setdefault(metric, _relabelled(cell, run.labels))
    out.paired = paired or None
    out.model_groups = groups or None
    views: dict[str, dict[str, dict[str, Leaderboard]]] = {}
    for run in data.runs:  # a family's leaderboard view, under the report labels
        for family, per_model_view in (run.results.leaderboards or {}).items():
            for model, per_decoding in per_model_view.items():
                views.setdefault(family, {}).setdefault(run.labels.get(model, model), per_decoding)
    if views:
        out.leaderboards = views
    return out


def merged_results(data: ReportData) -> EvalResults:
    """One EvalResults for the terminal and Markdown views of several runs."""
    if len(data.runs) == 1:
        return data.runs[0].results
    merged = labelled_results(data)
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


@dataclass(frozen=True)
class DimensionSeries:
    """One model on one dimension of a prompt space: its template scores at each level
    of the panel (in the panel's level order), each level's mean, and the dimension's
    share of the variance over templates with its interval."""

    model: str
    scores: list[list[float]]
    means: list[float | None]
    share: float | None
    share_low: float | None
    share_high: float | None


@dataclass(frozen=True)
class DimensionPanel:
    """What the chart of one dimension × metric shows."""

    metric: str
    dimension: str
    levels: list[str]
    series: list[DimensionSeries]


def dimension_panels(models: PerModel, metric: str) -> list[DimensionPanel]:
    """One panel per dimension of the space (`DecodingResult.space`), every model that
    has it side by side; levels in the order the first model's record lists them."""
    dims: dict[str, list[str]] = {}
    for _, dec in models.values():
        space = (dec.space or {}).get(metric)
        for name, effect in (space.dimensions if space else {}).items():
            known = dims.setdefault(name, [])
            known += [lv.level for lv in effect.levels if lv.level not in known]
    panels = []
    for name, levels in dims.items():
        series = [
            _dimension_series(label, dec, metric, name, levels)
            for label, (_, dec) in models.items()
            if name in getattr((dec.space or {}).get(metric), "dimensions", {})
        ]
        panels.append(DimensionPanel(metric, name, levels, series))
    return panels


def _dimension_series(
    label: str, dec: DecodingResult, metric: str, dimension: str, levels: list[str]
) -> DimensionSeries:
    effect = (dec.space or {})[metric].dimensions[dimension]
    by_level: dict[str, list[float]] = {level: [] for level in levels}
    for result in dec.templates.values():
        level = (result.levels or {}).get(dimension)
        score = result.metrics.get(metric)
        if level in by_level and score is not None:
            by_level[level].append(score)
    means = {lv.level: lv.mean for lv in effect.levels}
    return DimensionSeries(
        model=label,
        scores=[by_level[level] for level in levels],
        means=[means.get(level) for level in levels],
        share=effect.share,
        share_low=effect.share_ci_low,
        share_high=effect.share_ci_high,
    )

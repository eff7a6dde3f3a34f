"""Estimators: what the loop's answers become in results.json.

`Direct` (the full grid) scores each model × task as soon as its decodings ran (metrics
per template, aggregates with bootstrap CIs) and keeps only the bootstraps, which the
paired comparisons and model groups read at the end. `Imputed` (a budgeted or sequential
plan, `runner.imputed`) keeps each model's cells across the rounds, estimates the whole
grid from them after each round and decides the stops.

Both build a decoding's result with `decoding_result`, the one place that copies the
counters of a run (requests generated and cached, refusals, redactions, unreadable cache
rows, unencodable answers, constraint misses, seconds) into results.json.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from hakari.aggregate import BootstrapResult
from hakari.results import DecodingResult, EvalResults, ModelResult, TaskResult
from hakari.runner.aggregation import BootstrapStore, model_groups, paired_comparisons, score
from hakari.runner.collect import Collected, DecodingRun
from hakari.runner.context import RunContext
from hakari.runner.options import Decoding, skip_reason
from hakari.runner.plan import Key, Schedule
from hakari.tasks.loader import Task


class Estimator(Protocol):
    """What the loop hands its answers to (see `runner.loop`)."""

    def collected(self, model: str, task: str, decoding: Decoding) -> Collected | None:
        """Where this model's answers of task × decoding accumulate (None: a fresh
        `Collected` per call of `run_decodings`)."""

    def task_ran(self, model: str, task: Task, runs: dict[Decoding, DecodingRun]) -> None:
        """A model ran its passes of `task` in this round."""

    def round_ran(self, schedule: Schedule, round_index: int) -> None:
        """Every model ran the round: close the task × decodings that are done."""

    def publish(self, results: EvalResults, finished: Sequence[str]) -> None:
        """Fill `results` for the `finished` models (all of them, or those that finished
        before a model failed): models, paired comparisons, model groups."""


def decoding_result(
    scored: DecodingResult, run: DecodingRun, decoding: Decoding, extra_s: float = 0.0
) -> DecodingResult:
    """`scored` (templates and aggregates) with every counter of `run`; the optional
    counters are written only when not 0."""
    collected = run.collected
    scored.generated, scored.cached = run.generated, run.cached
    for name in ("unencodable_answers", "unreadable_cache_rows", "refusals", "redacted_secrets"):
        value = getattr(collected, name)
        if value:
            setattr(scored, name, value)
    if decoding == "constrained":
        scored.constraint_misses = collected.constraint_misses
    scored.wall_s = round(run.wall_s + extra_s, 3)
    return scored


def model_result(
    ctx: RunContext, model: str, decodings: Mapping[Key, DecodingResult]
) -> ModelResult:
    """A model's results: every task, every decoding in the order asked, skipped ones
    said so (`options.skip_reason`), and the engines that served it where the backend
    says (`RunContext.serving`)."""
    result = ModelResult(identity=ctx.identities[model], serving=ctx.serving.get(model))
    for task in ctx.tasks:
        result.tasks[task.name] = task_result(ctx, task, decodings)
    return result


def task_result(ctx: RunContext, task: Task, decodings: Mapping[Key, DecodingResult]) -> TaskResult:
    """One model × task: its baselines (`preflight.Baseline`) and every decoding in the
    order asked, skipped ones said so."""
    out = ctx.baselines[task.name].task_result(task.spec)
    for decoding in ctx.decodings:
        skipped = skip_reason(decoding, task.spec.answer_type)
        out.decodings[decoding] = (
            DecodingResult(skipped=skipped)
            if skipped is not None
            else decodings[(task.name, decoding)]
        )
    return out


class Direct:
    """The full grid: each model × task scored as it finishes."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.scored: dict[str, dict[Key, DecodingResult]] = {}
        self.bootstraps: BootstrapStore = {}

    def collected(self, model: str, task: str, decoding: Decoding) -> Collected | None:
        return None

    def task_ran(self, model: str, task: Task, runs: dict[Decoding, DecodingRun]) -> None:
        per_model = self.scored.setdefault(model, {})
        for decoding, run in runs.items():
            started = time.perf_counter()
            kept: dict[str, BootstrapResult] = {}
            dec = score(task, run.collected, self.ctx.opts, kept)
            per_metric = self.bootstraps.setdefault((task.name, decoding), {})
            for metric, boot in kept.items():
                per_metric.setdefault(metric, {})[model] = boot
            extra = time.perf_counter() - started
            per_model[(task.name, decoding)] = decoding_result(dec, run, decoding, extra)
        if self.ctx.on_task_done is not None:
            self.ctx.on_task_done(model, task.name, task_result(self.ctx, task, per_model))

    def round_ran(self, schedule: Schedule, round_index: int) -> None:
        for key in schedule.open():
            schedule.stopped[key] = "grid_full"

    def publish(self, results: EvalResults, finished: Sequence[str]) -> None:
        for model in finished:
            results.models[model] = model_result(self.ctx, model, self.scored.get(model, {}))
        if len(finished) < 2:
            return
        # a model that failed part-way kept some bootstraps: compare finished models only
        store = {
            key: {
                metric: {m: boot for m, boot in per_model.items() if m in finished}
                for metric, per_model in per_metric.items()
            }
            for key, per_metric in self.bootstraps.items()
        }
        results.paired = paired_comparisons(store) or None
        groups = model_groups(store)
        if groups:
            results.model_groups = groups

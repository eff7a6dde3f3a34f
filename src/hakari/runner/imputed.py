"""The estimator of a budgeted or sequential plan: every model's cells are kept across
the rounds; after each round every open task × decoding is estimated for every model
(`runner.estimated`), and closed when its criterion holds or its rounds run out. Every
number it publishes is marked as estimated (`estimated`, `budget`)."""

from __future__ import annotations

from collections.abc import Sequence

from hakari.aggregate.multiple import ModelGroups, group_record
from hakari.aggregate.paired import PairedComparison
from hakari.results import BudgetRecord, BudgetRound, DecodingResult, EvalResults, TemplateResult
from hakari.runner.collect import CellsCollected, Collected, DecodingRun
from hakari.runner.context import RunContext
from hakari.runner.estimate import decoding_result, model_result
from hakari.runner.estimated import Outcome, compare_models, outcome_of, round_log, stop_reason
from hakari.runner.options import Decoding
from hakari.runner.plan import LEVEL, Key, Schedule, TaskPlan
from hakari.tasks.loader import Task
from hakari.tasks.space import levels_field

INTERRUPTED = "interrupted"  # a later model failed: estimated from the cells run so far


class Imputed:
    def __init__(self, ctx: RunContext, schedule: Schedule) -> None:
        self.ctx = ctx
        self.schedule = schedule
        self.runs: dict[Key, dict[str, DecodingRun]] = {
            key: {m: DecodingRun(CellsCollected()) for m in ctx.models} for key in schedule.keys
        }
        self.logs: dict[Key, list[BudgetRound]] = {key: [] for key in schedule.keys}
        self.outcomes: dict[Key, Outcome] = {}

    def collected(self, model: str, task: str, decoding: Decoding) -> Collected | None:
        return self.runs[(task, decoding)][model].collected

    def task_ran(self, model: str, task: Task, runs: dict[Decoding, DecodingRun]) -> None:
        for decoding, now in runs.items():
            total = self.runs[(task.name, decoding)][model]
            total.generated += now.generated
            total.cached += now.cached
            total.wall_s += now.wall_s

    def round_ran(self, schedule: Schedule, round_index: int) -> None:
        for key in schedule.open():
            last = schedule.ran(key, round_index)
            tp = schedule.task_plans[key[0]]
            outcome = outcome_of(tp, self._cells(key, self.ctx.models), self.ctx.opts)
            reason = stop_reason(schedule.plan, outcome, schedule.decision_level)
            self.logs[key].append(round_log(schedule.done[key], tp, outcome))
            if reason is not None or last:
                schedule.stop(key, reason)
                outcome.stopped = schedule.stopped[key]
                self.outcomes[key] = outcome

    def _cells(self, key: Key, models: Sequence[str]) -> dict[str, CellsCollected]:
        return {m: self.runs[key][m].collected for m in models}  # type: ignore[misc]

    def publish(self, results: EvalResults, finished: Sequence[str]) -> None:
        outcomes = {key: self._outcome(key, finished) for key in self.schedule.keys}
        for model in finished:
            decodings = {
                key: self._decoding(key, model, outcome) for key, outcome in outcomes.items()
            }
            results.models[model] = model_result(self.ctx, model, decodings)
            for task in self.ctx.tasks if self.ctx.on_task_done is not None else ():
                done = results.models[model].tasks[task.name]
                self.ctx.on_task_done(model, task.name, done)  # type: ignore[misc]
        if len(finished) > 1 and self.ctx.opts.n_boot > 0:
            results.paired = paired_items(outcomes) or None
            results.model_groups = group_items(outcomes) or None

    def _outcome(self, key: Key, finished: Sequence[str]) -> Outcome:
        """The key's outcome among the finished models: as it stopped, or (a model
        failed) estimated from the cells the finished ones ran."""
        outcome = self.outcomes.get(key)
        if outcome is None:
            tp = self.schedule.task_plans[key[0]]
            outcome = outcome_of(tp, self._cells(key, finished), self.ctx.opts)
            outcome.stopped = INTERRUPTED
            return outcome
        if list(outcome.estimates) == list(finished):
            return outcome
        estimates = {m: outcome.estimates[m] for m in finished}
        comparisons, adjusted = compare_models(estimates, self.ctx.opts.n_boot)
        completions = {m: outcome.completions[m] for m in finished}
        return Outcome(estimates, completions, comparisons, adjusted, outcome.stopped)

    def _decoding(self, key: Key, model: str, outcome: Outcome) -> DecodingResult:
        tp = self.schedule.task_plans[key[0]]
        run = self.runs[key][model]
        estimated = _estimated(tp, run.collected, outcome, model)  # type: ignore[arg-type]
        plan = self.schedule.plan
        completion = outcome.completions[model]
        estimated.budget = BudgetRecord(
            budget=str(plan.grid_budget) if plan.grid_budget else None,
            target_ci=plan.target_ci,
            until_decided=plan.until_decided,
            design=tp.design.record(len(run.collected.answers)),  # type: ignore[attr-defined]
            estimator=completion.record(),
            stopped=outcome.stopped,
            rounds=self.logs[key],
            decision_level=self.schedule.decision_level if plan.until_decided else None,
        )
        return decoding_result(estimated, run, key[1])


def _estimated(
    tp: TaskPlan, collected: CellsCollected, outcome: Outcome, model: str
) -> DecodingResult:
    """The templates and aggregates of one model, estimated, with the cells each
    template ran and their fallback rate."""
    estimates = outcome.estimates[model]
    dec = DecodingResult()
    ran = {tid: 0 for tid in tp.template_ids}
    fallbacks = {tid: 0 for tid in tp.template_ids}
    for tid, _ in collected.answers:
        ran[tid] += 1
    for tid, _ in collected.fallback_cells:
        fallbacks[tid] += 1
    for tid in tp.template_ids:
        n = ran[tid]
        dec.templates[tid] = TemplateResult(
            metrics={m: e.per_template[tid] for m, e in estimates.items()},
            fallback_rate=fallbacks[tid] / n if n else 0.0,
            n=n,
            estimated=True,
            metrics_ci={m: list(e.per_template_ci[tid]) for m, e in estimates.items()},
            **levels_field(tp.task.spec, tid),
        )
    for metric, est in estimates.items():
        dec.aggregate[metric] = est.stats
    return dec


def paired_items(outcomes: dict[Key, Outcome]) -> dict[str, dict[str, list[PairedComparison]]]:
    """`paired[TASK][DECODING]` of a budgeted run: every pair on every metric."""
    out: dict[str, dict[str, list[PairedComparison]]] = {}
    for (task_name, decoding), outcome in outcomes.items():
        items = [c.record() for pairs in outcome.comparisons.values() for c in pairs]
        if items:
            out.setdefault(task_name, {})[decoding] = items
    return out


def group_items(outcomes: dict[Key, Outcome]) -> dict[str, dict[str, dict[str, ModelGroups]]]:
    """`model_groups[TASK][DECODING][METRIC]` of a budgeted run (see `aggregate.multiple`)."""
    out: dict[str, dict[str, dict[str, ModelGroups]]] = {}
    for (task_name, decoding), outcome in outcomes.items():
        for metric, tests in outcome.adjusted.items():
            scores = {m: e[metric].stats.sharpe for m, e in outcome.estimates.items()}
            out.setdefault(task_name, {}).setdefault(decoding, {})[metric] = group_record(
                tests, scores, level=LEVEL, estimated=True
            )
    return out

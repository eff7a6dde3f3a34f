"""What the loop's answers become: every model's cells of every task × decoding, kept
across the rounds (`estimators.Cells`), estimated as soon as they can no longer change,
the stop rule read after each round (`runner.stopping`), and the finished models' results
published through the one finisher (`estimators.finish_model`, `compare_models`).

Each task's plan picks its estimator: `Direct` when it is one round of every cell (a full
run, a budget that covers the grid, a grid run in full below the budget floor), else
`Imputed`; nothing else here depends on the plan. A model × task is reported
(`on_task_done`) as soon as its numbers are final: a full grid's when the model ran the
task, an estimated one's at the end (its records hold the rounds and why they stopped,
which every model's answers decide).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hakari.results import BudgetRound, DecodingResult, EvalResults, ModelResult, TaskResult
from hakari.results.paired import ModelGroups, PairedComparison
from hakari.runner import stopping
from hakari.runner.context import RunContext
from hakari.runner.estimators import (
    Cells,
    Comparisons,
    Direct,
    Estimator,
    FinishOptions,
    Imputed,
    ModelEstimate,
    compare_models,
    finish_model,
)
from hakari.runner.families import MemberDraws
from hakari.runner.options import Decoding, skip_reason
from hakari.runner.plan import Key, Schedule
from hakari.tasks.loader import Task


class RunGrids:
    """The cells, estimates and stops of one run (see the module docstring)."""

    def __init__(self, ctx: RunContext, schedule: Schedule) -> None:
        self.ctx = ctx
        self.schedule = schedule
        self.estimators: dict[Key, Estimator] = {
            key: Direct() if schedule.task_plans[key[0]].full else Imputed()
            for key in schedule.keys
        }
        self.options = FinishOptions(ctx.plan.alpha, ctx.plan.n_boot, ctx.plan.seed)
        self.cells: dict[Key, dict[str, Cells]] = {
            key: {m: Cells(constraint_misses=0 if key[1] == "constrained" else None)
                  for m in ctx.models}
            for key in schedule.keys
        }  # fmt: skip
        self.estimates: dict[Key, dict[str, ModelEstimate]] = {k: {} for k in schedule.keys}
        self.compared: dict[Key, tuple[tuple[ModelEstimate, ...], Comparisons]] = {}
        self.logs: dict[Key, list[BudgetRound]] = {key: [] for key in schedule.keys}
        self.reported: dict[Key, dict[str, DecodingResult]] = {k: {} for k in schedule.keys}

    def answers(
        self, model: str, task: str, decodings: Sequence[Decoding]
    ) -> dict[Decoding, Cells]:
        """Where this model's answers of the task's decodings go (`run_decodings`)."""
        return {d: self.cells[(task, d)][model] for d in decodings}

    def task_ran(self, model: str, task: Task, round_index: int) -> None:
        """A model ran its passes of `task` this round: the decodings that have no round
        left are estimated now. Numbers that need nothing from the other models (not
        estimated: no rounds to record) are finished at once, their answers let go, and
        the model × task is reported."""
        keys = [k for k in self.schedule.open() if k[0] == task.name]
        final = [k for k in keys if self.schedule.last_round(k, round_index)]
        for key in final:
            self._estimate(key, model)
        if any(self.estimators[k].estimated for k in keys) or final != keys:
            return
        for key in keys:
            self.reported[key][model] = self._finish(key, model)
            self.cells[key][model] = Cells()  # finished: its estimate is all that is read
        on_task_done = self.ctx.options.output.on_task_done
        if on_task_done is not None:
            result = self.task_result(task, {key: self.reported[key][model] for key in keys})
            on_task_done(model, task.name, result)

    def round_ran(self, round_index: int) -> None:
        """Every model ran the round: each open key's estimates and comparisons, the stop
        rule, and the round's log."""
        schedule = self.schedule
        level = stopping.decision_level(schedule.n_rounds)
        for key in schedule.open():
            last = schedule.ran(key, round_index)
            models = self.ctx.models
            estimates = {m: self._estimate(key, m) for m in models}
            comparisons = self._compare(key, estimates)
            reason = stopping.stop_reason(schedule.plan, estimates, comparisons, level)
            grid_size = schedule.task_plans[key[0]].grid_size
            self.logs[key].append(
                stopping.round_log(schedule.done[key], grid_size, estimates, comparisons)
            )
            if reason is not None or last:
                schedule.stop(key, reason or stopping.ran_out(schedule.done[key], grid_size))

    def _estimate(self, key: Key, model: str) -> ModelEstimate:
        """The model's estimate of the key, made again only when its cells changed."""
        cells = self.cells[key][model]
        made = self.estimates[key].get(model)
        if model in self.reported[key]:
            assert made is not None
            return made
        if made is None or made.cells_run != len(cells.answers):
            grid = self.schedule.task_plans[key[0]].grid
            estimator = self.estimators[key]
            made = self.estimates[key][model] = estimator.estimate(grid, cells, self.options)
        return made

    def _compare(self, key: Key, estimates: Mapping[str, ModelEstimate]) -> Comparisons:
        """`compare_models`, made again only when the models or an estimate changed."""
        made = tuple(estimates.values())
        cached = self.compared.get(key)
        if (
            cached is None
            or len(cached[0]) != len(made)
            or any(a is not b for a, b in zip(cached[0], made, strict=True))
        ):
            self.compared[key] = (made, compare_models(estimates, self.estimators[key]))
        return self.compared[key][1]

    def _finisher(self, key: Key) -> Estimator:
        """The key's estimator with what its rounds did (an estimated grid's `budget`
        record)."""
        if not isinstance(self.estimators[key], Imputed):
            return self.estimators[key]
        tp = self.schedule.task_plans[key[0]]
        stopped = self.schedule.stopped.get(key, stopping.INTERRUPTED)
        level = stopping.decision_level(self.schedule.n_rounds)
        return Imputed(self.schedule.plan.budget_run(tp.design, stopped, self.logs[key], level))

    def _finish(self, key: Key, model: str) -> DecodingResult:
        grid = self.schedule.task_plans[key[0]].grid
        estimate = self._estimate(key, model)
        return finish_model(grid, self.cells[key][model], estimate, self._finisher(key))

    def draws(self, model: str, task: str, decoding: str, metric: str) -> MemberDraws | None:
        """The model's bootstrap on a task × decoding's metric (a family's pooled
        intervals read it: `families.DrawsFn`); None when none ran."""
        key = (task, decoding)
        if key not in self.cells or model not in self.cells[key]:
            return None
        estimate = self._estimate(key, model).metrics.get(metric)
        if estimate is None or estimate.replicates is None:
            return None
        reps, confidence, method = estimate.replicates, estimate.confidence, estimate.ci_method
        if confidence is None or method is None:
            return None
        return MemberDraws(reps.template_ids, reps.every, confidence, method)

    def publish(self, results: EvalResults, finished: Sequence[str]) -> None:
        """Fill `results` for the `finished` models (all of them, or those that finished
        before a model failed: keys still open are estimated from the cells run so far):
        models, paired comparisons, model groups."""
        decodings: dict[str, dict[Key, DecodingResult]] = {m: {} for m in finished}
        paired: dict[str, dict[str, list[PairedComparison]]] = {}
        groups: dict[str, dict[str, dict[str, ModelGroups]]] = {}
        for key in self.schedule.keys:
            for model in finished:
                done = self.reported[key].get(model)
                decodings[model][key] = done if done is not None else self._finish(key, model)
            estimates = {m: self._estimate(key, m) for m in finished}
            comparisons = self._compare(key, estimates)
            if comparisons.pairs:
                paired.setdefault(key[0], {})[key[1]] = comparisons.records()
            if comparisons.groups:
                groups.setdefault(key[0], {})[key[1]] = comparisons.groups
        on_task_done = self.ctx.options.output.on_task_done
        for model in finished:
            results.models[model] = self.model_result(model, decodings[model])
            for task in self.ctx.tasks:
                if on_task_done is not None and self._reported_at_end(task):
                    on_task_done(model, task.name, results.models[model].tasks[task.name])
        if len(finished) > 1:
            results.paired = paired or None
        if groups:
            results.model_groups = groups

    def _reported_at_end(self, task: Task) -> bool:
        """Whether the task's numbers are reported when the run ends (`on_task_done`): an
        estimated grid's, which the rounds of every model decide."""
        return any(self.estimators[k].estimated for k in self.schedule.keys if k[0] == task.name)

    def model_result(self, model: str, decodings: Mapping[Key, DecodingResult]) -> ModelResult:
        """A model's results: every task, every decoding in the order asked."""
        result = ModelResult(identity=self.ctx.identities[model])
        if model in self.ctx.serving:
            result.serving = self.ctx.serving[model]
        for task in self.ctx.tasks:
            result.tasks[task.name] = self.task_result(task, decodings)
        return result

    def task_result(self, task: Task, decodings: Mapping[Key, DecodingResult]) -> TaskResult:
        """One model × task: its baselines (`preflight.Baseline`) and every decoding in the
        order asked, skipped ones said so (`options.skip_reason`)."""
        out = self.ctx.baselines[task.name].task_result(task.spec)
        for decoding in self.ctx.decodings:
            skipped = skip_reason(decoding, task.spec.answer_type)
            out.decodings[decoding] = (
                DecodingResult(skipped=skipped)
                if skipped is not None
                else decodings[(task.name, decoding)]
            )
        return out

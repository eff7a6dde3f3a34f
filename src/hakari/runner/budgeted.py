"""Budgeted and sequential runs (`--budget`, `--target-ci`, `--until-decided`): which
cells of each task's template × instance grid run, in rounds, through the same collect
path and response cache as a full run, and the estimates made from them.

The one decision a reader must know: **rounds are prefixes of one fixed design**
(`aggregate.budget.design`, the same for every model), and each round runs only the cells
the previous rounds did not. A budgeted run is one round of B cells; a sequential run
starts at 2× one template's run (or at the budget, if smaller) and doubles the cells each
round up to the budget or the full grid, stopping a task × decoding as soon as its
criterion holds. Nothing is paid twice: a rerun, a larger budget or a later full run
finds every cell already run in the cache.

Criteria. `--target-ci W`: every model's Sharpe interval (every metric of the task) has
a half-width of at most W. `--until-decided`: every pair of models differs on every
metric's Sharpe score after the multiple-comparison correction (`aggregate.multiple`),
at the level 0.05 / L for a run with at most L rounds (Bonferroni over the looks: deciding
at every look at 0.05 would declare about one tied pair in ten "different" by chance over
the rounds). Models are loaded once per round, one at a time, so memory holds one model
as in a full run; a run with one model keeps it loaded.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hakari.aggregate.budget.design import Budget, Design, balanced_design, parse_budget
from hakari.aggregate.budget.estimate import (
    BudgetComparison,
    BudgetEstimate,
    Completion,
    compare,
    estimate,
)
from hakari.aggregate.budget.grid import (
    AnswerGrid,
    gold_strata,
    label_grid,
    number_grid,
    score_grid,
)
from hakari.aggregate.multiple import AdjustedTest, ModelGroups, adjust, group_record
from hakari.aggregate.paired import PairedComparison
from hakari.backends.base import Backend
from hakari.backends.cache import ResponseCache
from hakari.errors import HakariInputError
from hakari.results import (
    BudgetRecord,
    BudgetRound,
    DecodingResult,
    ModelResult,
    TemplateResult,
)
from hakari.runner import preflight
from hakari.runner.aggregation import metric_options
from hakari.runner.collect import CellsCollected, SampleWriter, run_decodings, task_instances
from hakari.runner.options import Decoding, ProgressHook, RunOptions, skip_reason
from hakari.runner.requests import resolve_chat
from hakari.scoring import corpus
from hakari.tasks.data import get_path
from hakari.tasks.extract import gold_answer
from hakari.tasks.loader import Task
from hakari.tasks.prompts import select_templates

LEVEL = 0.05
FIRST_ROUND_MULTIPLE = 2  # a sequential run's first round: 2× one template's run
KIND_OF_ANSWER = {"label": "label", "number": "number", "text": "score"}


@dataclass(frozen=True)
class Plan:
    """What the user asked: a budget, a target half-width, deciding between models."""

    budget: Budget | None = None
    target_ci: float | None = None
    until_decided: bool = False

    @property
    def active(self) -> bool:
        return self.budget is not None or self.sequential

    @property
    def sequential(self) -> bool:
        return self.target_ci is not None or self.until_decided

    def rounds(self, n_templates: int, n_instances: int) -> list[int]:
        """Cumulative cells after each round."""
        grid = n_templates * n_instances
        cap = self.budget.cells(n_templates, n_instances) if self.budget else grid
        if not self.sequential:
            return [cap]
        out = [min(cap, FIRST_ROUND_MULTIPLE * n_instances)]
        while out[-1] < cap:
            out.append(min(cap, 2 * out[-1]))
        return out


def make_plan(
    budget: str | float | int | None,
    target_ci: float | None,
    until_decided: bool,
    *,
    n_models: int,
    n_boot: int,
) -> Plan:
    """The plan of the options, or one `HakariInputError` naming the option."""
    parsed = None
    if budget is not None:
        try:
            parsed = parse_budget(str(budget))
        except ValueError as exc:
            raise HakariInputError(str(exc), field="--budget") from None
    if target_ci is not None and not (np.isfinite(target_ci) and target_ci > 0):
        raise HakariInputError(
            f"must be a half-width above 0, such as 0.02 (got {target_ci})", field="--target-ci"
        )
    if until_decided and n_models < 2:
        raise HakariInputError(
            "compares models: give at least two --model", field="--until-decided"
        )
    plan = Plan(parsed, target_ci, until_decided)
    if plan.sequential and n_boot < 1:
        option = "--target-ci" if target_ci is not None else "--until-decided"
        raise HakariInputError(
            f"reads bootstrap intervals: --n-boot must be at least 1 (got {n_boot})",
            field=option,
        )
    return plan


def check_task_fits(task: Task) -> None:
    """A budgeted run can estimate the task's metrics: label and numeric answers always
    (the completed grid is a grid of answers); free text only with metrics that are means
    of per-item scores (EM, F1), whose scores are what the completion fills."""
    spec = task.spec
    if spec.answer_type == "text":
        for metric in spec.metrics:
            if not corpus.get(str(metric)).per_item:
                raise HakariInputError(
                    f"metric {metric!r} of a free-text task is not a mean of per-item scores; "
                    "a budgeted run cannot estimate it (run the full grid)",
                    file=str(task.path),
                    field="--budget",
                )


@dataclass
class TaskPlan:
    """One task's grid, design and rounds."""

    task: Task
    template_ids: list[str]
    positions: list[int]  # split positions of the instances, in run order
    golds: list[Any]
    design: Design
    rounds: list[int]

    @property
    def grid_size(self) -> int:
        return len(self.template_ids) * len(self.positions)

    def cells(self, start: int, stop: int) -> frozenset[tuple[str, int]]:
        rows = self.design.order[start:stop]
        return frozenset((self.template_ids[t], self.positions[i]) for t, i in rows)


def task_plan(task: Task, plan: Plan, opts: RunOptions) -> TaskPlan:
    spec = task.spec
    template_ids = [t.id for t in select_templates(spec, opts.templates)]
    positions, golds = [], []
    for position, row in task_instances(task, opts):
        positions.append(position)
        golds.append(gold_answer(spec, row_target(task, row)))
    kind = KIND_OF_ANSWER[spec.answer_type]
    strata = gold_strata(golds, kind, list(spec.labels or ()))
    design = balanced_design(len(template_ids), strata, opts.seed)
    return TaskPlan(
        task, template_ids, positions, golds, design, plan.rounds(len(template_ids), len(golds))
    )


def row_target(task: Task, row: dict[str, Any]) -> Any:
    return get_path(row, task.spec.field_path(task.spec.target))


@dataclass
class Cells:
    """What a model × task × decoding has run so far, over the rounds."""

    collected: CellsCollected = field(default_factory=CellsCollected)
    generated: int = 0
    cached: int = 0
    wall_s: float = 0.0


@dataclass
class Outcome:
    """The estimates of one task × decoding for every model, and why it stopped."""

    estimates: dict[str, dict[str, BudgetEstimate]]  # model -> metric -> estimate
    completions: dict[str, Completion]
    comparisons: dict[str, list[BudgetComparison]]  # metric -> pairs
    adjusted: dict[str, list[AdjustedTest]]  # metric -> pairs, Sharpe, corrected
    stopped: str
    rounds: list[BudgetRound]


def answer_grid(tp: TaskPlan, cells: CellsCollected, opts: RunOptions) -> AnswerGrid:
    """The observed cells of one model as the completion model reads them."""
    spec = tp.task.spec
    index = {p: k for k, p in enumerate(tp.positions)}
    if spec.answer_type == "label":
        answers: dict[str, dict[int, Any]] = {tid: {} for tid in tp.template_ids}
        for (tid, position), answer in cells.answers.items():
            answers[tid][index[position]] = answer
        return label_grid(tp.template_ids, answers, tp.golds, list(spec.labels or ()))
    shape = (len(tp.template_ids), len(tp.positions))
    t_of = {tid: t for t, tid in enumerate(tp.template_ids)}
    if spec.answer_type == "number":
        values = np.full(shape, np.nan)
        for (tid, position), answer in cells.answers.items():
            values[t_of[tid], index[position]] = float(answer)
        return number_grid(tp.template_ids, values, tp.golds)
    item_scores: dict[str, np.ndarray] = {}
    for metric in map(str, spec.metrics):
        scores = np.full(shape, np.nan)
        for tid in tp.template_ids:
            run = [(index[p], a) for (t, p), a in cells.answers.items() if t == tid]
            if not run:
                continue
            rows = [k for k, _ in run]
            values_t = corpus.per_item_scores(
                metric,
                [a for _, a in run],
                [tp.golds[k] for k in rows],
                **metric_options(tp.task, metric, opts),
            )
            assert values_t is not None  # checked by check_task_fits
            scores[t_of[tid], rows] = values_t
        item_scores[metric] = scores
    return score_grid(tp.template_ids, item_scores, tp.golds)


def estimate_models(
    tp: TaskPlan, runs: dict[str, Cells], opts: RunOptions
) -> tuple[dict[str, dict[str, BudgetEstimate]], dict[str, Completion]]:
    metrics = [str(m) for m in tp.task.spec.metrics]
    options = {m: metric_options(tp.task, m, opts) for m in metrics}
    estimates, completions = {}, {}
    for model, run in runs.items():
        grid = answer_grid(tp, run.collected, opts)
        estimates[model], completions[model] = estimate(
            grid,
            metrics,
            alpha=opts.alpha,
            n_boot=opts.n_boot,
            seed=opts.seed,
            metric_options=options,
        )
    return estimates, completions


def compare_models(
    estimates: dict[str, dict[str, BudgetEstimate]], n_boot: int
) -> tuple[dict[str, list[BudgetComparison]], dict[str, list[AdjustedTest]]]:
    models = list(estimates)
    comparisons: dict[str, list[BudgetComparison]] = {}
    adjusted: dict[str, list[AdjustedTest]] = {}
    if len(models) < 2:
        return comparisons, adjusted
    for metric in estimates[models[0]]:
        pairs = [
            compare(a, estimates[a][metric], b, estimates[b][metric])
            for a, b in itertools.combinations(models, 2)
        ]
        comparisons[metric] = pairs
        if n_boot > 0:
            adjusted[metric] = adjust(
                [(c.model_a, c.model_b) for c in pairs],
                [c.statistics["sharpe"].replicates for c in pairs],
                [c.statistics["sharpe"].replicates.p_value() for c in pairs],
            )
    return comparisons, adjusted


def criterion_met(
    plan: Plan,
    estimates: dict[str, dict[str, BudgetEstimate]],
    adjusted: dict[str, list[AdjustedTest]],
    decision_level: float,
) -> str | None:
    """Which criterion stopped this task × decoding (None: keep going)."""
    if not plan.sequential:
        return None
    reasons = []
    if plan.target_ci is not None:
        widths = [
            (e.stats.sharpe_ci_high - e.stats.sharpe_ci_low) / 2
            for per_metric in estimates.values()
            for e in per_metric.values()
            if e.stats.sharpe_ci_low is not None and e.stats.sharpe_ci_high is not None
        ]
        if not widths or max(widths) > plan.target_ci:
            return None
        reasons.append("target_ci")
    if plan.until_decided:
        tests = [t for per_metric in adjusted.values() for t in per_metric]
        if not tests or any(t.p_romano_wolf >= decision_level for t in tests):
            return None
        reasons.append("decided")
    return "+".join(reasons)


def run_budgeted(
    models: Sequence[str],
    tasks: Sequence[Task],
    decodings: Sequence[Decoding],
    plan: Plan,
    opts: RunOptions,
    factory: Callable[[str], Backend],
    cache: ResponseCache | None,
    hook: ProgressHook,
    write_sample: SampleWriter,
    baselines: dict[str, preflight.Baseline],
) -> tuple[dict[str, ModelResult], dict[tuple[str, str], Outcome]]:
    """Every round of every task × decoding for every model; the model results (estimated
    numbers, marked) and each task × decoding's outcome (for the comparisons)."""
    plans = {task.name: task_plan(task, plan, opts) for task in tasks}
    keys = [
        (task.name, decoding)
        for task in tasks
        for decoding in decodings
        if skip_reason(decoding, task.spec.answer_type) is None
    ]
    runs: dict[tuple[str, str], dict[str, Cells]] = {k: {m: Cells() for m in models} for k in keys}
    done = {k: 0 for k in keys}
    logs: dict[tuple[str, str], list[BudgetRound]] = {k: [] for k in keys}
    outcomes: dict[tuple[str, str], Outcome] = {}
    identities: dict[str, dict[str, str]] = {}
    max_rounds = max(len(p.rounds) for p in plans.values())
    decision_level = LEVEL / max_rounds
    by_name = {task.name: task for task in tasks}
    kept: Backend | None = None
    try:
        for round_index in range(max_rounds):
            active = [k for k in keys if k not in outcomes]
            if not active:
                break
            for model in models:
                backend = kept if kept is not None else factory(model)
                try:
                    identities[model] = {k: str(v) for k, v in vars(backend.identity).items()}
                    use_chat = resolve_chat(backend, opts.prompt_format)
                    # a task's decodings that run the same cells this round run in one
                    # pass (their requests on one prompt share its prefill)
                    passes: dict[tuple[str, frozenset[tuple[str, int]]], list[Decoding]] = {}
                    for key in active:
                        tp = plans[key[0]]
                        target = tp.rounds[min(round_index, len(tp.rounds) - 1)]
                        cells = tp.cells(done[key], target)
                        if cells:
                            passes.setdefault((key[0], cells), []).append(key[1])
                    for (task_name, cells), decodings in passes.items():
                        label = f"{model} · {task_name} · {'+'.join(decodings)}"
                        ran = run_decodings(
                            by_name[task_name],
                            decodings,
                            backend,
                            opts,
                            cache,
                            use_chat,
                            baselines[task_name][0],
                            f"{label} · round {round_index + 1}",
                            hook,
                            write_sample,
                            cells=cells,
                            collected={d: runs[(task_name, d)][model].collected for d in decodings},
                        )
                        for decoding, done_now in ran.items():
                            run = runs[(task_name, decoding)][model]
                            run.generated += done_now.generated
                            run.cached += done_now.cached
                            run.wall_s += done_now.wall_s
                finally:
                    if len(models) == 1:
                        kept = backend
                    else:
                        backend.close()
            for key in active:
                tp = plans[key[0]]
                target = tp.rounds[min(round_index, len(tp.rounds) - 1)]
                done[key] = target
                estimates, completions = estimate_models(tp, runs[key], opts)
                comparisons, adjusted = compare_models(estimates, opts.n_boot)
                reason = criterion_met(plan, estimates, adjusted, decision_level)
                logs[key].append(_round_log(target, tp, estimates, adjusted))
                last = target >= tp.rounds[-1]
                if reason is not None or last:
                    if reason is None:
                        reason = "grid_full" if target >= tp.grid_size else "budget"
                    outcomes[key] = Outcome(
                        estimates, completions, comparisons, adjusted, reason, logs[key]
                    )
    finally:
        if kept is not None:
            kept.close()
    return _model_results(
        models, tasks, decodings, plans, runs, outcomes, baselines, identities, plan, decision_level
    ), outcomes


def _round_log(
    cells: int,
    tp: TaskPlan,
    estimates: dict[str, dict[str, BudgetEstimate]],
    adjusted: dict[str, list[AdjustedTest]],
) -> BudgetRound:
    half_widths = {
        model: {
            metric: (
                (e.stats.sharpe_ci_high - e.stats.sharpe_ci_low) / 2
                if e.stats.sharpe_ci_low is not None and e.stats.sharpe_ci_high is not None
                else None
            )
            for metric, e in per_metric.items()
        }
        for model, per_metric in estimates.items()
    }
    round_log = BudgetRound(
        cells=cells, fraction=cells / tp.grid_size, sharpe_ci_half_width=half_widths
    )
    if adjusted:
        round_log.max_p_adjusted = max(
            t.p_romano_wolf for tests in adjusted.values() for t in tests
        )
    return round_log


def _model_results(
    models: Sequence[str],
    tasks: Sequence[Task],
    decodings: Sequence[Decoding],
    plans: dict[str, TaskPlan],
    runs: dict[tuple[str, str], dict[str, Cells]],
    outcomes: dict[tuple[str, str], Outcome],
    baselines: dict[str, preflight.Baseline],
    identities: dict[str, dict[str, str]],
    plan: Plan,
    decision_level: float,
) -> dict[str, ModelResult]:
    out: dict[str, ModelResult] = {}
    for model in models:
        result = ModelResult(identity=identities.get(model, {}))
        for task in tasks:
            spec = task.spec
            task_result = baselines[task.name].task_result(spec)
            for decoding in decodings:
                key = (task.name, decoding)
                skipped = skip_reason(decoding, spec.answer_type)
                if skipped is not None:
                    task_result.decodings[decoding] = DecodingResult(skipped=skipped)
                    continue
                task_result.decodings[decoding] = _decoding_result(
                    plans[task.name],
                    decoding,
                    runs[key][model],
                    outcomes[key],
                    model,
                    plan,
                    decision_level,
                )
            result.tasks[spec.name] = task_result
        out[model] = result
    return out


def _decoding_result(
    tp: TaskPlan,
    decoding: str,
    run: Cells,
    outcome: Outcome,
    model: str,
    plan: Plan,
    decision_level: float,
) -> DecodingResult:
    estimates = outcome.estimates[model]
    completion = outcome.completions[model]
    collected = run.collected
    dec = DecodingResult()
    run_per_template = {tid: 0 for tid in tp.template_ids}
    fallbacks = {tid: 0 for tid in tp.template_ids}
    for tid, _ in collected.answers:
        run_per_template[tid] += 1
    for tid, _ in collected.fallback_cells:
        fallbacks[tid] += 1
    for tid in tp.template_ids:
        n = run_per_template[tid]
        dec.templates[tid] = TemplateResult(
            metrics={m: e.per_template[tid] for m, e in estimates.items()},
            fallback_rate=fallbacks[tid] / n if n else 0.0,
            n=n,
            estimated=True,
            metrics_ci={m: list(e.per_template_ci[tid]) for m, e in estimates.items()},
        )
    for metric, est in estimates.items():
        dec.aggregate[metric] = est.stats
    dec.generated, dec.cached = run.generated, run.cached
    dec.wall_s = round(run.wall_s, 3)
    if decoding == "constrained":
        dec.constraint_misses = collected.constraint_misses
    dec.budget = BudgetRecord(
        budget=str(plan.budget) if plan.budget else None,
        target_ci=plan.target_ci,
        until_decided=plan.until_decided,
        design=tp.design.record(len(collected.answers)),
        estimator=completion.record(),
        stopped=outcome.stopped,
        rounds=outcome.rounds,
        decision_level=decision_level if plan.until_decided else None,
    )
    return dec


def paired_items(
    outcomes: dict[tuple[str, str], Outcome],
) -> dict[str, dict[str, list[PairedComparison]]]:
    """`paired[TASK][DECODING]` of a budgeted run: every pair on every metric."""
    out: dict[str, dict[str, list[PairedComparison]]] = {}
    for (task_name, decoding), outcome in outcomes.items():
        items = [c.record() for pairs in outcome.comparisons.values() for c in pairs]
        if items:
            out.setdefault(task_name, {})[decoding] = items
    return out


def group_items(
    outcomes: dict[tuple[str, str], Outcome],
) -> dict[str, dict[str, dict[str, ModelGroups]]]:
    """`model_groups[TASK][DECODING][METRIC]` of a budgeted run (see `aggregate.multiple`)."""
    out: dict[str, dict[str, dict[str, ModelGroups]]] = {}
    for (task_name, decoding), outcome in outcomes.items():
        for metric, tests in outcome.adjusted.items():
            scores = {m: e[metric].stats.sharpe for m, e in outcome.estimates.items()}
            out.setdefault(task_name, {}).setdefault(decoding, {})[metric] = group_record(
                tests, scores, level=LEVEL, estimated=True
            )
    return out

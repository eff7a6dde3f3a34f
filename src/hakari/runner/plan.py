"""What a run evaluates, in which rounds, and when a task × decoding stops.

A run is a *plan*: the full grid (one round of every template × instance cell), a
budget (`--budget`: one round of a prefix of each task's cells) or a sequential run
(`--target-ci`, `--until-decided`: rounds of growing prefixes until a criterion holds).
The loop (`runner.loop`) asks the `Schedule` for each round's passes and the estimator
(`runner.estimate`) decides the stops with `stop_reason`.

The one decision a reader must know: **rounds are prefixes of one fixed design**
(`aggregate.budget.design`, the same for every model), and each round runs only the cells
the previous rounds did not. A sequential run starts at 2× one template's run (or at the
budget, if smaller) and doubles the cells each round up to the budget or the full grid.
Nothing is paid twice: a rerun, a larger budget or a later full run finds every cell
already run in the cache.

Criteria. `--target-ci W`: every model's Sharpe interval (every metric of the task) has a
half-width of at most W. `--until-decided`: every pair of models differs on every metric's
Sharpe score after the multiple-comparison correction (`aggregate.multiple`), at the level
0.05 / L for a run with at most L rounds (Bonferroni over the looks). Neither acts on a
degenerate interval (zero width, or one that excludes its own estimate: too few bootstrap
replicates, fewer than `enough_replicates`); the rounds then go on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hakari._util import checks
from hakari.aggregate.budget.design import Budget, Design, balanced_design, parse_budget
from hakari.aggregate.budget.grid import gold_strata
from hakari.errors import HakariInputError
from hakari.runner.collect import task_instances
from hakari.runner.options import Decoding, RunOptions, skip_reason
from hakari.scoring import corpus
from hakari.tasks.data import get_path
from hakari.tasks.extract import gold_answer
from hakari.tasks.loader import Task
from hakari.tasks.prompts import select_templates

LEVEL = 0.05
FIRST_ROUND_MULTIPLE = 2  # a sequential run's first round: 2× one template's run
KIND_OF_ANSWER = {"label": "label", "number": "number", "text": "score"}

Key = tuple[str, Decoding]  # (task name, decoding)
Cells = frozenset[tuple[str, int]]  # (template id, split position)


@dataclass(frozen=True)
class Plan:
    """What the user asked: a cell budget of the grid, a target half-width, deciding
    between models; none of them: the full grid."""

    grid_budget: Budget | None = None
    target_ci: float | None = None
    until_decided: bool = False
    # tasks whose grid is too small to estimate honestly and cheap to run in full
    # (`aggregate.budget.floor`, decided in `preflight.check_budget_floor`)
    full_grid: frozenset[str] = frozenset()

    @property
    def active(self) -> bool:
        """Part of the grid, estimated (else the full grid, scored directly)."""
        return self.grid_budget is not None or self.sequential

    @property
    def sequential(self) -> bool:
        return self.target_ci is not None or self.until_decided

    def rounds(self, n_templates: int, n_instances: int, full: bool = False) -> list[int]:
        """Cumulative cells after each round (one round of the whole grid when `full`)."""
        grid = n_templates * n_instances
        cap = self.grid_budget.cells(n_templates, n_instances) if self.grid_budget else grid
        if full:
            return [grid]
        if not self.sequential:
            return [cap]
        out = [min(cap, FIRST_ROUND_MULTIPLE * n_instances)]
        while out[-1] < cap:
            out.append(min(cap, 2 * out[-1]))
        return out


def make_plan(
    grid_budget: object, target_ci: object, until_decided: object, *, n_models: int, n_boot: int
) -> Plan:
    """The plan of the options, or one `HakariInputError` naming the option (the same
    from the CLI and from `evaluate`)."""
    parsed = None
    if grid_budget is not None:
        if isinstance(grid_budget, bool) or not isinstance(grid_budget, str | int | float):
            raise HakariInputError(
                f"must be text such as 2x, 0.1 or 5000 (got {grid_budget!r:.40})", field="--budget"
            )
        try:
            parsed = parse_budget(str(grid_budget))
        except ValueError as exc:
            raise HakariInputError(str(exc), field="--budget") from None
    if target_ci is not None:
        target_ci = checks.number(target_ci, "--target-ci", low=0.0, low_open=True)
    checks.flag(until_decided, "--until-decided")
    if until_decided and n_models < 2:
        raise HakariInputError(
            "compares models: give at least two --model", field="--until-decided"
        )
    plan = Plan(parsed, target_ci, until_decided)  # type: ignore[arg-type]
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
    if spec.answer_type != "text":
        return
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

    def cells(self, start: int, stop: int) -> Cells:
        rows = self.design.order[start:stop]
        return frozenset((self.template_ids[t], self.positions[i]) for t, i in rows)


def task_plan(task: Task, plan: Plan, opts: RunOptions) -> TaskPlan:
    spec = task.spec
    template_ids = [t.id for t in select_templates(spec, opts.templates)]
    positions, golds = [], []
    for position, row in task_instances(task, opts):
        positions.append(position)
        golds.append(gold_answer(spec, get_path(row, spec.field_path(spec.target))))
    strata = gold_strata(golds, KIND_OF_ANSWER[spec.answer_type], list(spec.labels or ()))
    design = balanced_design(len(template_ids), strata, opts.seed)
    return TaskPlan(
        task,
        template_ids,
        positions,
        golds,
        design,
        plan.rounds(len(template_ids), len(golds), task.name in plan.full_grid),
    )


def applying(task: Task, decodings: Sequence[Decoding]) -> list[Decoding]:
    """The decodings that apply to the task (the one rule: `options.skip_reason`)."""
    return [d for d in decodings if skip_reason(d, task.spec.answer_type) is None]


@dataclass
class Schedule:
    """The rounds of a plan: which cells of each open task × decoding a round runs, in
    which passes, and which are done (`stopped`: key → why)."""

    plan: Plan
    keys: list[Key]
    task_plans: dict[str, TaskPlan]
    n_rounds: int
    done: dict[Key, int] = field(default_factory=dict)  # cells run per key
    stopped: dict[Key, str] = field(default_factory=dict)

    @classmethod
    def of(cls, plan: Plan, tasks: Sequence[Task], decodings: Sequence[Decoding],
           opts: RunOptions) -> Schedule:  # fmt: skip
        keys = [(t.name, d) for t in tasks for d in applying(t, decodings)]
        if not plan.active:
            return cls(plan, keys, {}, 1)
        plans = {t.name: task_plan(t, plan, opts) for t in tasks}
        n_rounds = max(len(p.rounds) for p in plans.values())
        return cls(plan, keys, plans, n_rounds, {k: 0 for k in keys})

    @property
    def decision_level(self) -> float:
        """The level a pair must reach at one look (Bonferroni over the possible looks)."""
        return LEVEL / self.n_rounds

    def open(self) -> list[Key]:
        return [k for k in self.keys if k not in self.stopped]

    def target(self, task_name: str, round_index: int) -> int:
        """Cumulative cells of the task after this round."""
        rounds = self.task_plans[task_name].rounds
        return rounds[min(round_index, len(rounds) - 1)]

    def passes(
        self, task: Task, round_index: int
    ) -> list[tuple[tuple[Decoding, ...], Cells | None]]:
        """The calls of `run_decodings` for this task this round: decodings that run the
        same cells together (a prompt's greedy and constrained requests share its
        prefill), log-likelihood, a different computation, in a pass of its own."""
        groups: dict[Cells | None, list[Decoding]] = {}
        for name, decoding in self.open():
            if name != task.name:
                continue
            cells = None
            if self.plan.active:
                cells = self.task_plans[name].cells(
                    self.done[(name, decoding)], self.target(name, round_index)
                )
                if not cells:
                    continue
            groups.setdefault(cells, []).append(decoding)
        out: list[tuple[tuple[Decoding, ...], Cells | None]] = []
        for cells, decodings in groups.items():
            generating = tuple(d for d in decodings if d != "loglik")
            out += [(generating, cells)] if generating else []
            out += [(("loglik",), cells)] if "loglik" in decodings else []
        return out

    def label(self, model: str, task_name: str, decodings: Sequence[str], round_index: int) -> str:
        """The progress label of a pass."""
        label = f"{model} · {task_name} · {'+'.join(decodings)}"
        return f"{label} · round {round_index + 1}" if self.plan.active else label

    def ran(self, key: Key, round_index: int) -> bool:
        """Record the round's cells as run; True when the key has no round left."""
        self.done[key] = self.target(key[0], round_index)
        return self.done[key] >= self.task_plans[key[0]].rounds[-1]

    def stop(self, key: Key, reason: str | None) -> None:
        """Close `key`: `reason` if a criterion held, else why its rounds ran out."""
        if reason is None:
            reason = (
                "grid_full" if self.done[key] >= self.task_plans[key[0]].grid_size else "budget"
            )
        self.stopped[key] = reason


def usable_interval(estimate: float, low: float | None, high: float | None) -> bool:
    """An interval a stopping rule may read: finite, of positive width, holding its own
    estimate. Too few bootstrap replicates give zero-width intervals or ones that
    exclude the estimate (a Sharpe "CI" [1.121, 1.121] for 0.471)."""
    if low is None or high is None:
        return False
    if not all(math.isfinite(x) for x in (estimate, low, high)):
        return False
    return high > low and low <= estimate <= high


def enough_replicates(n_boot: int | None, confidence: float | None) -> bool:
    """Bootstrap replicates enough for each tail of the interval to hold at least one
    (2 / (1 − confidence): 40 at 0.95); with fewer, an end is an interpolation between
    the extreme replicates, which a stopping rule must not read."""
    if not n_boot or confidence is None:
        return False
    return n_boot >= math.ceil(2 / (1 - confidence) - 1e-9)


def half_width(low: float | None, high: float | None) -> float | None:
    return (high - low) / 2 if low is not None and high is not None else None

"""What a run evaluates and in which rounds: a *plan* and its `Schedule`.

Every run is a plan of rounds over each task's template × instance grid: the full grid
is one round of every cell; a budget (`--budget`) one round of a prefix of each task's
cells; a sequential run (`--target-ci`, `--until-decided`) rounds of growing prefixes
until a criterion holds (`runner.stopping`). The loop (`runner.loop`) asks the
`Schedule` for each round's passes; what the cells become is `runner.grids`'s.

The one decision a reader must know: **rounds are prefixes of one fixed design**
(`aggregate.budget.design`, the same for every model), and each round runs only the cells
the previous rounds did not. A sequential run starts at 2× one template's run (or at the
budget, if smaller) and doubles the cells each round up to the budget or the full grid.
Nothing is paid twice: a rerun, a larger budget or a later full run finds every cell
already run in the cache. A round that runs the whole grid needs no design (every cell).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from hakari._util import checks
from hakari.aggregate.budget.design import Budget, Design, balanced_design, parse_budget
from hakari.aggregate.budget.floor import grid_verdict
from hakari.aggregate.budget.grid import gold_strata
from hakari.errors import HakariInputError
from hakari.results import BudgetRound
from hakari.runner.baselines import Baseline
from hakari.runner.estimators import BudgetRun, GridTask, task_grid
from hakari.runner.estimators.grid import Cell, Item
from hakari.runner.options import Decoding, skip_reason
from hakari.runner.settings import PlanOptions
from hakari.tasks.loader import Task
from hakari.tasks.prompts import select_templates

log = logging.getLogger(__name__)

FIRST_ROUND_MULTIPLE = 2  # a sequential run's first round: 2× one template's run
KIND_OF_ANSWER = {"label": "label", "number": "number", "text": "score"}

Key = tuple[str, Decoding]  # (task name, decoding)


@dataclass(frozen=True)
class Plan:
    """What the user asked: a cell budget of the grid, a target half-width, deciding
    between models; none of them: the full grid, one round of every cell."""

    grid_budget: Budget | None = None
    target_ci: float | None = None
    until_decided: bool = False
    # a budgeted run's tasks that run their whole grid, and why: the budget covers it, or
    # it is too small to estimate honestly and cheap to run in full
    # (`aggregate.budget.floor`); decided in `check_budget_floor` below
    in_full: Mapping[str, str] = field(default_factory=dict)

    @property
    def sequential(self) -> bool:
        return self.target_ci is not None or self.until_decided

    @property
    def budgeted(self) -> bool:
        """A budget or a stopping criterion: the rounds may end before the full grid, so
        every number is estimated from the cells run (`estimators.Imputed`) and marked."""
        return self.grid_budget is not None or self.sequential

    def rounds(self, n_templates: int, n_instances: int, in_full: bool = False) -> list[int]:
        """Cumulative cells after each round (one round of the whole grid when `in_full`)."""
        grid = n_templates * n_instances
        cap = self.grid_budget.cells(n_templates, n_instances) if self.grid_budget else grid
        if in_full:
            return [grid]
        if not self.sequential:
            return [cap]
        out = [min(cap, FIRST_ROUND_MULTIPLE * n_instances)]
        while out[-1] < cap:
            out.append(min(cap, 2 * out[-1]))
        return out

    def budget_run(self, design: Design, stopped: str, rounds: Sequence[BudgetRound],
                   decision_level: float) -> BudgetRun:  # fmt: skip
        """What the `budget` record of a task × decoding says of the run (`BudgetRun`)."""
        return BudgetRun(
            design=design.name,
            seed=design.seed,
            stopped=stopped,
            budget=str(self.grid_budget) if self.grid_budget else None,
            target_ci=self.target_ci,
            until_decided=self.until_decided,
            rounds=tuple(rounds),
            decision_level=decision_level if self.until_decided else None,
        )


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


def check_budget_floor(
    tasks: Sequence[Task], baselines: dict[str, Baseline], plan: Plan, asked: PlanOptions
) -> Plan:
    """The plan with the tasks a budget covers whole, or whose grid is too small to
    estimate honestly from it (`aggregate.budget.floor.grid_verdict`, each said in one
    line), run in full; a `HakariInputError` naming `--budget` and the smallest honest
    budget when the grid is not cheap to run in full. A sequential run is judged on its
    first round."""
    full = dict(plan.in_full)
    for task in tasks if plan.budgeted else ():
        n_templates = len(select_templates(task.spec, asked.templates))
        n_instances = baselines[task.name][0]
        rounds = plan.rounds(n_templates, n_instances)
        verdict = grid_verdict(n_templates, n_instances, rounds[0])
        if verdict.action == "refuse":
            raise HakariInputError(str(verdict.message), file=str(task.path), field="--budget")
        if verdict.action == "full":
            log.warning("%s: %s", task.name, verdict.message)
            full[task.name] = str(verdict.message)
        elif rounds == [n_templates * n_instances]:
            full[task.name] = f"the budget covers the grid ({rounds[0]} cells)"
    return dataclasses.replace(plan, in_full=full)


@dataclass(frozen=True)
class CellSet:
    """Cells of one task's grid (a pass's), as a mask over its templates × items."""

    grid: GridTask
    mask: np.ndarray  # (templates, items) bool

    @cached_property
    def _index(self) -> tuple[dict[str, int], dict[Item, int]]:
        return (
            {tid: t for t, tid in enumerate(self.grid.template_ids)},
            {item: i for i, item in enumerate(self.grid.items)},
        )

    def __contains__(self, cell: object) -> bool:
        if not isinstance(cell, tuple) or len(cell) != 2:
            return False
        templates, items = self._index
        t, i = templates.get(cell[0]), items.get(cell[1])
        return t is not None and i is not None and bool(self.mask[t, i])

    def __len__(self) -> int:
        return int(self.mask.sum())

    def __iter__(self) -> Iterator[Cell]:
        for t, i in zip(*np.nonzero(self.mask), strict=True):
            yield self.grid.template_ids[t], self.grid.items[i]


@dataclass
class TaskPlan:
    """One task's grid (`estimators.GridTask`: its templates, instances and golds), the
    order its cells run in (the design) and the cumulative cells after each round."""

    grid: GridTask
    seed: int
    rounds: list[int]

    @property
    def grid_size(self) -> int:
        return self.grid.size

    @property
    def full(self) -> bool:
        """One round of every cell: a full run, whatever was asked (no budget, a budget
        that covers the grid, a grid run in full by `check_budget_floor`);
        its numbers are not estimated (`estimators.Direct`)."""
        return self.rounds == [self.grid_size]

    @cached_property
    def design(self) -> Design:
        """The fixed order of the grid's cells (computed when a round runs part of it)."""
        grid = self.grid
        strata = gold_strata(list(grid.golds), KIND_OF_ANSWER[grid.answer_type], grid.labels)
        return balanced_design(len(grid.template_ids), strata, self.seed)

    def cells(self, start: int, stop: int) -> CellSet:
        """The cells of design rows [start, stop): every cell for the whole grid."""
        shape = (len(self.grid.template_ids), len(self.grid.items))
        if start <= 0 and stop >= self.grid_size:
            return CellSet(self.grid, np.ones(shape, dtype=bool))
        return CellSet(self.grid, self.design.mask(stop) & ~self.design.mask(start))


def task_plan(task: Task, plan: Plan, asked: PlanOptions, items: Sequence[int],
              golds: Sequence[object]) -> TaskPlan:  # fmt: skip
    """The task's plan over the instances the run evaluates (`items`: their split
    positions, `golds`: their gold answers, from the row scan)."""
    grid = task_grid(task, asked.templates, asked.qa_mode, items, golds)
    rounds = plan.rounds(len(grid.template_ids), len(grid.items), task.name in plan.in_full)
    return TaskPlan(grid, asked.seed, rounds)


def applying(task: Task, decodings: Sequence[Decoding]) -> list[Decoding]:
    """The decodings that apply to the task (the one rule: `options.skip_reason`)."""
    return [d for d in decodings if skip_reason(d, task.spec.answer_type) is None]


@dataclass
class Schedule:
    """The rounds of a plan: which cells of each open task × decoding a round runs, in
    which passes, and which are done (`stopped`: key → why, `runner.stopping`)."""

    plan: Plan
    keys: list[Key]
    task_plans: dict[str, TaskPlan]
    n_rounds: int
    done: dict[Key, int] = field(default_factory=dict)  # cells run per key
    stopped: dict[Key, str] = field(default_factory=dict)

    @classmethod
    def of(cls, plan: Plan, task_plans: dict[str, TaskPlan], tasks: Sequence[Task],
           decodings: Sequence[Decoding]) -> Schedule:  # fmt: skip
        keys = [(t.name, d) for t in tasks for d in applying(t, decodings)]
        n_rounds = max(len(p.rounds) for p in task_plans.values())
        return cls(plan, keys, task_plans, n_rounds, {k: 0 for k in keys})

    def open(self) -> list[Key]:
        return [k for k in self.keys if k not in self.stopped]

    @property
    def keeps_models_open(self) -> bool:
        """Several rounds: every model's backend stays open until the run ends, so that no
        round loads a model again (`loop.Backends`)."""
        return self.n_rounds > 1

    def target(self, task_name: str, round_index: int) -> int:
        """Cumulative cells of the task after this round."""
        rounds = self.task_plans[task_name].rounds
        return rounds[min(round_index, len(rounds) - 1)]

    def last_round(self, key: Key, round_index: int) -> bool:
        """Whether this round leaves the key no round to run."""
        return self.target(key[0], round_index) >= self.task_plans[key[0]].rounds[-1]

    def passes(self, task: Task, round_index: int) -> list[tuple[tuple[Decoding, ...], CellSet]]:
        """The calls of `run_decodings` for this task this round: decodings that run the
        same cells together (a prompt's greedy and constrained requests share its
        prefill), log-likelihood, a different computation, in a pass of its own."""
        groups: dict[tuple[int, int], list[Decoding]] = {}
        target = self.target(task.name, round_index)
        for name, decoding in self.open():
            if name == task.name and self.done[(name, decoding)] < target:
                groups.setdefault((self.done[(name, decoding)], target), []).append(decoding)
        tp = self.task_plans[task.name]
        out: list[tuple[tuple[Decoding, ...], CellSet]] = []
        for (start, stop), decodings in groups.items():
            cells = tp.cells(start, stop)
            generating = tuple(d for d in decodings if d != "loglik")
            out += [(generating, cells)] if generating else []
            out += [(("loglik",), cells)] if "loglik" in decodings else []
        return out

    def label(self, model: str, task_name: str, decodings: Sequence[str], round_index: int) -> str:
        """The progress label of a pass (its round, when the plan has several)."""
        label = f"{model} · {task_name} · {'+'.join(decodings)}"
        return f"{label} · round {round_index + 1}" if self.n_rounds > 1 else label

    def ran(self, key: Key, round_index: int) -> bool:
        """Record the round's cells as run; True when the key has no round left."""
        self.done[key] = self.target(key[0], round_index)
        return self.done[key] >= self.task_plans[key[0]].rounds[-1]

    def stop(self, key: Key, reason: str) -> None:
        self.stopped[key] = reason

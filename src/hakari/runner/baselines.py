"""The trivial baselines of a task as a run records them (`hakari.tasks.chance`: the
paper's fallback-only score, the uniform guess, the majority answer), computed once from
the gold answers of the instances evaluated and shared by every model; and the note when
`--limit` took a label mix far from the split's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

from hakari.errors import HakariInputError
from hakari.results import TaskResult
from hakari.results.vocab import ALL_ITEMS
from hakari.runner.settings import PlanOptions
from hakari.tasks.chance import (
    chance_rates,
    majority_answer_rates,
    split_golds,
    uniform_guess_rates,
)
from hakari.tasks.extract import gold_answer
from hakari.tasks.loader import Task
from hakari.tasks.spec import TaskSpec


class Baseline(NamedTuple):
    """What the row scan learns of a task, shared by every model: the instances evaluated
    (their split positions and gold answers: the items of the task's grid) and the
    trivial baselines per metric (`hakari.tasks.chance`)."""

    n_rows: int
    chance: dict[str, float]  # the paper's fallback-only score
    uniform_guess: dict[str, float]
    majority_answer: dict[str, float]
    notes: tuple[str, ...] = ()
    positions: tuple[int, ...] = ()
    golds: tuple[Any, ...] = ()

    def task_result(self, spec: TaskSpec) -> TaskResult:
        """The task's result before any decoding has run, its baselines filled in."""
        out = TaskResult.for_task(spec, self.n_rows, self.chance)
        if self.uniform_guess:
            out.uniform_guess = self.uniform_guess
        if self.majority_answer:
            out.majority_answer = self.majority_answer
        if self.notes:
            out.notes = list(self.notes)
        return out


def task_baseline(
    task: Task,
    golds: list[Any],
    plan: PlanOptions,
    guess_rates: Sequence[float] = (),
    positions: Sequence[int] = (),
) -> Baseline:
    """The baselines of the instances evaluated (`golds`: their canonical gold answers;
    `guess_rates`: each one's uniform-guess accuracy, `chance.instance_guess_rate`;
    `positions`: their positions in the split)."""
    spec = task.spec
    first_rows = plan.limit not in (None, ALL_ITEMS)  # "all" takes the whole split
    notes = (label_mix_note(task, golds, plan),) if first_rows else ()
    return Baseline(
        len(golds),
        chance_rates(spec, golds),
        uniform_guess_rates(spec, guess_rates),
        majority_answer_rates(spec, golds),
        tuple(n for n in notes if n),
        tuple(positions),
        tuple(golds),
    )


LABEL_MIX_DISTANCE = 0.2  # total variation distance that makes --limit's label mix "far"


def label_mix_note(task: Task, golds: list[Any], plan: PlanOptions) -> str | None:
    """One line when the first --limit instances hold a label mix far from the split's
    (JGLUE's files are ordered by label): the numbers would describe another task."""
    spec = task.spec
    if spec.answer_type != "label" or not spec.labels:
        return None
    try:
        split = [gold_answer(spec, g) for g in split_golds(task, data_dir=plan.data_path)]
    except (HakariInputError, ValueError, TypeError):
        return None  # rows past --limit are not the run's: a bad one there is no error
    if len(split) <= len(golds):
        return None
    share_run, share_all = Counter(golds), Counter(split)
    distance = 0.5 * sum(
        abs(share_run[x] / len(golds) - share_all[x] / len(split)) for x in spec.labels
    )
    if distance <= LABEL_MIX_DISTANCE:
        return None
    mix = ", ".join(f"{x} {share_run[x] / len(golds):.0%}" for x in spec.labels)
    whole = ", ".join(f"{x} {share_all[x] / len(split):.0%}" for x in spec.labels)
    return (
        f"--limit {plan.limit} takes the split's first rows: labels {mix} (whole split: "
        f"{whole}); --sample {plan.limit} draws a seeded random subset instead"
    )

"""The trivial baselines of a task, computed from the gold answers of the evaluated
instances (never stored in task files):

- the paper's fallback-only score (`chance_rates`, results.json's `chance`): the score of
  answering every instance with the fallback;
- the uniform guess (`uniform_guess_rates`): the expected score of picking one of the
  k_i choices of each instance at random (accuracy: the mean of 1/k_i over the instances,
  k_i the instance's own number of choices, the task's labels where it has none; 0 for
  MCC and the correlations);
- the majority answer (`majority_answer_rates`): the score of always answering the most
  common gold label of the evaluated instances.

The fallback-only score, in detail:

The paper's chance rows (Tables 3 and 5) equal the score of a model whose every output
fails to parse, i.e. of the Appendix B fallback applied to every instance: the share of
"acceptable" for CoLA/JCoLA, of "entailment" for MNLI/JNLI, of the first label for
CommonsenseQA/JCommonsenseQA, and 0 for MCC, the correlations (a constant prediction) and
EM/F1 (an empty answer). They are computed here from the gold answers, never stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

from hakari.errors import HakariInputError
from hakari.scoring import corpus
from hakari.tasks.choices import choice_field, uniform_guess_rate
from hakari.tasks.data import Row, get_path, iter_rows
from hakari.tasks.extract import fallback_prediction, gold_answer
from hakari.tasks.loader import Task, load_task
from hakari.tasks.spec import TaskSpec


def chance_rates(spec: TaskSpec, golds: Sequence[Any]) -> dict[str, float]:
    """Each of the task's metrics for the fallback answer given to every instance.

    `golds` are the gold values of the instances, raw (as read from the data) or already
    in the form `extract.gold_answer` returns; both are accepted.
    """
    if len(golds) == 0:
        raise HakariInputError("no gold answers to compute a chance rate from", field="data")
    references = [_canonical_gold(spec, g, i) for i, g in enumerate(golds)]
    predictions = [fallback_prediction(spec)] * len(references)
    return {
        name: corpus.compute(name, predictions, references, lang=spec.language)
        for name in spec.metrics
    }


GUESS_EXPECTATION_ZERO = frozenset({"mcc", "pearson", "spearman"})
"""Metrics whose expected value under a guess independent of the gold is 0."""


def instance_guess_rate(spec: TaskSpec, row: Row) -> float:
    """The accuracy of a uniform guess on one instance (a row as `iter_rows` gives it):
    1/k, k its own number of choices in a multiple-choice task, else the task's labels
    (0 for a task without labels: nothing to guess from, `uniform_guess_rates` is empty)."""
    if spec.choices is not None and choice_field(0) in row:
        return uniform_guess_rate(spec.choices, row)
    return 1.0 / len(spec.labels) if spec.labels else 0.0


def uniform_guess_rates(
    spec: TaskSpec, instance_rates: Sequence[float] | None = None
) -> dict[str, float]:
    """The expected score of a uniform guess, per metric where it is known: for accuracy
    the mean over the instances of 1/k_i (`instance_rates`, from `instance_guess_rate`;
    without them 1/k of the task's labels), 0 for MCC and the correlations; empty for
    text and number tasks (no finite set to guess from)."""
    if spec.answer_type != "label" or not spec.labels:
        return {}
    out: dict[str, float] = {}
    for name in spec.metrics:
        if name == "accuracy":
            out[name] = fmean(instance_rates) if instance_rates else 1.0 / len(spec.labels)
        elif name in GUESS_EXPECTATION_ZERO:
            out[name] = 0.0
    return out


def majority_label(spec: TaskSpec, golds: Sequence[Any]) -> Any:
    """The most common gold label (ties: the first in the task's label order)."""
    references = [_canonical_gold(spec, g, i) for i, g in enumerate(golds)]
    assert spec.labels is not None
    counts = Counter(references)
    return max(spec.labels, key=lambda label: counts.get(label, 0))


def majority_answer_rates(spec: TaskSpec, golds: Sequence[Any]) -> dict[str, float]:
    """Each metric for the most common gold label given to every instance (label tasks
    only; empty otherwise)."""
    if spec.answer_type != "label" or not spec.labels or len(golds) == 0:
        return {}
    references = [_canonical_gold(spec, g, i) for i, g in enumerate(golds)]
    predictions = [majority_label(spec, references)] * len(references)
    return {
        name: corpus.compute(name, predictions, references, lang=spec.language)
        for name in spec.metrics
    }


def _canonical_gold(spec: TaskSpec, value: Any, index: int) -> Any:
    try:
        return gold_answer(spec, value)
    except (ValueError, TypeError) as exc:
        raise HakariInputError(
            f"instance {index}: gold {value!r} cannot be used: {exc}", field=spec.target
        ) from exc


def split_golds(task: Task, *, split: str | None = None, data_dir: Path | None = None) -> list[Any]:
    """The raw gold values of one split of a task, in file order."""
    spec = task.spec
    path = spec.field_path(spec.target)
    rows = iter_rows(spec, split=split, data_dir=data_dir, task_dir=task.task_dir)
    return [_gold_of(row, path, i, task) for i, row in enumerate(rows)]


def _gold_of(row: dict[str, Any], path: str, index: int, task: Task) -> Any:
    try:
        return get_path(row, path)
    except KeyError:
        raise HakariInputError(
            f"row {index} has no gold field {path!r} (fields: {', '.join(sorted(row))})",
            file=str(task.path),
            field="target",
        ) from None


def task_chance_rates(
    task: Task | str | Path, *, split: str | None = None, data_dir: Path | None = None
) -> dict[str, float]:
    """`chance_rates` on a task's split (its evaluation split by default)."""
    loaded = task if isinstance(task, Task) else load_task(task)
    return chance_rates(loaded.spec, split_golds(loaded, split=split, data_dir=data_dir))

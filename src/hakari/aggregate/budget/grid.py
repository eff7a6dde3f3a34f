"""A partly observed template × instance grid of one model × task × decoding, in the
three forms hakari's metrics consume, and its completion from imputed codes.

The completion model (`completion`) works on integer codes; what a code is depends on
the task:

* `label` (label tasks: accuracy, MCC): the code is the answer label itself, the
  stratum the gold label. A completed grid of codes *is* a grid of answers, so every
  metric is computed from it exactly as for a full run.
* `score` (free-text tasks whose metrics are all means of per-item scores: EM, F1):
  the code is a coarse class of the cell's item scores (all 0, all at their maximum,
  anything between); an imputed cell takes the item scores of a random observed cell of
  the same template and class (hot deck), so EM and F1 of an imputed cell stay a pair
  that was really observed.
* `number` (numeric answers: Pearson, Spearman): the code is a bin of the predicted
  number (each distinct value its own bin when there are at most `MAX_BINS`), the stratum
  a bin of the gold number; an imputed cell takes the number of a random observed cell of
  the same template and bin.

The decision a reader must know: a donor comes from the same template and class when that
template has one, else from any template with that class, so a template's own way of
answering (its numbers, its partial answers) is what fills its missing cells.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hakari.aggregate.budget.completion import CodedGrid

KINDS = ("label", "score", "number")
MAX_BINS = 12
GOLD_BINS = 8


@dataclass(frozen=True, eq=False)
class AnswerGrid:
    """The observed cells of one model × task × decoding.

    `values[t, i, v]` (NaN where missing) holds, for `score` grids, the item score of
    metric `value_names[v]`; for `number` grids, the predicted number (v = 0); label grids
    need none (the code is the answer: `labels[code]`).
    """

    template_ids: tuple[str, ...]
    kind: str
    coded: CodedGrid
    references: Sequence[Any]
    labels: tuple[Hashable, ...] = ()
    values: np.ndarray | None = None
    value_names: tuple[str, ...] = ()
    gold_codes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def n_templates(self) -> int:
        return len(self.template_ids)

    @property
    def n_instances(self) -> int:
        return len(self.references)

    @property
    def observed(self) -> np.ndarray:
        return self.coded.observed

    def complete_values(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
        """Values of a completed code grid (T, N): observed cells keep theirs, imputed
        ones take a donor's (see the module docstring). None for label grids."""
        if self.values is None:
            return None
        observed = self.observed
        out = self.values.copy()
        miss_t, miss_i = np.nonzero(~observed)
        if miss_t.size == 0:
            return out
        donor_t, donor_i = _donors(self.coded.codes, codes[miss_t, miss_i], miss_t, rng)
        out[miss_t, miss_i] = self.values[donor_t, donor_i]
        return out


def _donors(
    observed_codes: np.ndarray, wanted: np.ndarray, templates: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """For each (template, wanted code): a random observed cell of that template with that
    code, else of any template with that code."""
    n_templates = observed_codes.shape[0]
    n_codes = int(observed_codes.max()) + 1
    obs_t, obs_i = np.nonzero(observed_codes >= 0)
    obs_k = observed_codes[obs_t, obs_i]

    def pick(keys_obs: np.ndarray, keys_wanted: np.ndarray, n_keys: int) -> np.ndarray:
        order = np.argsort(keys_obs, kind="stable")
        counts = np.bincount(keys_obs, minlength=n_keys)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        have = counts[keys_wanted]
        offset = np.floor(rng.random(keys_wanted.size) * np.maximum(have, 1)).astype(np.int64)
        chosen = np.where(
            have > 0, order[np.minimum(starts[keys_wanted] + offset, len(order) - 1)], -1
        )
        return chosen

    own = pick(obs_t * n_codes + obs_k, templates * n_codes + wanted, n_templates * n_codes)
    any_template = pick(obs_k, wanted, n_codes)
    chosen = np.where(own >= 0, own, any_template)
    if np.any(chosen < 0):
        raise ValueError("an imputed code has no observed cell to take values from")
    return obs_t[chosen], obs_i[chosen]


def _check_cells(
    template_ids: Sequence[str], n_instances: int, cells: Mapping[str, Mapping[int, Any]]
) -> None:
    unknown = set(cells) - set(template_ids)
    if unknown:
        raise ValueError(f"answers for unknown templates {sorted(unknown)}")
    for tid, row in cells.items():
        for i in row:
            if not 0 <= i < n_instances:
                raise ValueError(f"template {tid!r}: instance {i} outside [0, {n_instances})")


def label_grid(
    template_ids: Sequence[str],
    answers: Mapping[str, Mapping[int, Hashable]],
    references: Sequence[Hashable],
    labels: Sequence[Hashable],
) -> AnswerGrid:
    """A grid of label answers: `answers[template][instance] = label`.

    `labels` are the task's labels; an answer or gold outside them gets a code of its own
    (after the labels), so that it stays wrong for every metric."""
    n = len(references)
    _check_cells(template_ids, n, answers)
    index: dict[Hashable, int] = {label: k for k, label in enumerate(labels)}
    gold_codes = gold_strata(references, "label", labels)
    for r in references:
        index.setdefault(r, len(index))
    codes = np.full((len(template_ids), n), -1, dtype=np.int64)
    for t, tid in enumerate(template_ids):
        for i, answer in answers.get(tid, {}).items():
            codes[t, i] = index.setdefault(answer, len(index))
    all_labels = tuple(index)
    coded = CodedGrid(codes, gold_codes.copy(), len(all_labels), len(all_labels))
    return AnswerGrid(
        tuple(template_ids),
        "label",
        coded,
        list(references),
        labels=all_labels,
        gold_codes=gold_codes,
    )


def score_grid(
    template_ids: Sequence[str],
    item_scores: Mapping[str, np.ndarray],
    references: Sequence[Any],
) -> AnswerGrid:
    """A grid of per-item scores: `item_scores[metric]` is (T, N), NaN where missing, the
    same cells observed for every metric. Codes: 0 = every score 0, 2 = every score 1,
    1 = anything else (renumbered to the classes present)."""
    names = tuple(item_scores)
    if not names:
        raise ValueError("a score grid needs at least one metric")
    values = np.stack([np.asarray(item_scores[m], dtype=np.float64) for m in names], axis=2)
    observed = ~np.isnan(values[:, :, 0])
    if np.any(np.isnan(values[observed])):
        raise ValueError("every metric must be observed on the same cells")
    low = np.all(values <= 0.0, axis=2)
    high = np.all(values >= 1.0, axis=2)
    raw = np.where(low, 0, np.where(high, 2, 1))
    codes = _renumber(np.where(observed, raw, -1))
    n_codes = int(codes.max()) + 1 if observed.any() else 1
    coded = CodedGrid(codes, np.zeros(len(references), dtype=np.int64), n_codes, 1)
    return AnswerGrid(
        tuple(template_ids), "score", coded, list(references), values=values, value_names=names
    )


def number_grid(
    template_ids: Sequence[str], predictions: np.ndarray, references: Sequence[float]
) -> AnswerGrid:
    """A grid of numeric answers (T, N), NaN where missing; strata are gold quantile bins."""
    pred = np.asarray(predictions, dtype=np.float64)
    observed = ~np.isnan(pred)
    seen = pred[observed]
    distinct = np.unique(seen)
    if distinct.size <= MAX_BINS:
        raw = np.searchsorted(distinct, pred)
    else:
        edges = np.unique(np.quantile(seen, np.linspace(0, 1, MAX_BINS + 1)[1:-1]))
        raw = np.searchsorted(edges, pred, side="right")
    codes = _renumber(np.where(observed, raw, -1))
    strata = gold_strata(references, "number")
    n_codes = int(codes.max()) + 1 if observed.any() else 1
    coded = CodedGrid(codes, strata, n_codes, int(strata.max()) + 1)
    return AnswerGrid(
        tuple(template_ids),
        "number",
        coded,
        list(references),
        values=pred[:, :, None],
        value_names=("prediction",),
    )


def gold_strata(golds: Sequence[Any], kind: str, labels: Sequence[Hashable] = ()) -> np.ndarray:
    """The stratum of each instance, which the design balances and the completion model
    conditions on: the gold label's code (`label`), a quantile bin of the gold number
    (`number`, `GOLD_BINS` bins), 0 for free text (`score`)."""
    if kind == "label":
        index: dict[Hashable, int] = {label: k for k, label in enumerate(labels)}
        return np.array([index.setdefault(g, len(index)) for g in golds], dtype=np.int64)
    if kind == "number":
        gold = np.asarray(golds, dtype=np.float64)
        edges = np.unique(np.quantile(gold, np.linspace(0, 1, GOLD_BINS + 1)[1:-1]))
        bins = np.searchsorted(edges, gold, side="right")
        return np.unique(bins, return_inverse=True)[1].astype(np.int64)
    return np.zeros(len(golds), dtype=np.int64)


def _renumber(codes: np.ndarray) -> np.ndarray:
    """Codes renumbered 0..K-1 over the values present (missing stays -1)."""
    present = np.unique(codes[codes >= 0])
    out = np.full(codes.shape, -1, dtype=np.int64)
    observed = codes >= 0
    out[observed] = np.searchsorted(present, codes[observed])
    return out

"""What a corpus-level metric is, the registry of them, and the helpers they share.

A `CorpusMetric` computes its value over a whole split (`compute`), says which answer
types it scores (a task file may only name metrics that fit its `answer_type`), gives
per-item scores when it is a mean of them (`item_scores`, else None), and builds a
`ReplicateScorer`: the metric of every template under many instance resamples at once,
for the two-way bootstrap (`hakari.aggregate`), without a Python loop over replicates.
A metric that has no vectorised form can leave `replicate_scorer` to the default, which
recomputes `compute` on each replicate (correct, slower).

`register` adds a metric under its name; `get` and `names` read the registry. Each metric
is one module of this package, imported by the package (see `__init__`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hakari.results.vocab import AnswerType, Language

ReplicateScorer = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""(instance indices (b, n), instance multiplicities (b, n)) → the metric of every template
under every replicate, shape (b, n_templates)."""


@dataclass(frozen=True)
class MetricValue:
    """A corpus-level metric value and, when it was defined by convention, why.

    `degenerate` is None for an ordinary value, else one of "constant_predictions",
    "constant_references", "single_instance".
    """

    value: float
    degenerate: str | None = None


@dataclass(frozen=True)
class MetricOptions:
    """`lang` ("en" or "ja": EM/F1's reference scorer) and `nfkc` (EM/F1: NFKC on the
    prediction and the golds first). Every metric accepts both, so that callers can pass
    a task's language uniformly."""

    lang: Language = "en"
    nfkc: bool = False


class CorpusMetric:
    """One metric; subclasses set the class attributes and implement `compute`."""

    name: ClassVar[str]
    answer_types: ClassVar[frozenset[AnswerType]]
    description: ClassVar[str]
    per_item: ClassVar[bool] = False  # the metric is the mean of `item_scores`
    # the values the metric can take: the intervals of the statistics over templates are
    # cut to the range this implies (hakari.aggregate.intervals)
    value_range: ClassVar[tuple[float, float]] = (-math.inf, math.inf)

    def compute(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> MetricValue:
        """A `per_item` metric is the mean of its item scores; any other computes its own."""
        scores = self.item_scores(predictions, references, options) if self.per_item else None
        if scores is None:
            raise NotImplementedError
        return MetricValue(float(np.mean(scores)))

    def item_scores(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> np.ndarray | None:
        """Per-item scores whose mean is the metric, or None when it is not such a mean."""
        return None

    def replicate_scorer(
        self,
        predictions: Sequence[Sequence[Any]],
        references: Sequence[Any],
        options: MetricOptions,
        item_scores: np.ndarray | None = None,
    ) -> ReplicateScorer:
        """The metric of every template (`predictions[t]`) under many instance resamples;
        `item_scores` (n_templates, n) may be passed when already computed."""
        if self.per_item:
            if item_scores is None:
                item_scores = item_matrix(self, predictions, references, options)
            return per_item_scorer(item_scores)

        def score(idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
            out = np.empty((idx.shape[0], len(predictions)))
            for b, row in enumerate(idx):
                refs = [references[i] for i in row]
                for t, preds in enumerate(predictions):
                    value = self.compute([preds[i] for i in row], refs, options)
                    out[b, t] = value.value
            return out

        return score


_REGISTRY: dict[str, CorpusMetric] = {}


def register(metric_class: type[CorpusMetric]) -> type[CorpusMetric]:
    """Class decorator: one instance of the metric joins the registry under its name."""
    if metric_class.name in _REGISTRY:
        raise ValueError(f"corpus metric {metric_class.name!r} is registered twice")
    _REGISTRY[metric_class.name] = metric_class()
    return metric_class


def get(name: str) -> CorpusMetric:
    """The registered metric `name`; `ValueError` naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; expected one of {', '.join(names())}") from None


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


# --------------------------------------------------------------------------- helpers


def encode_labels(
    predictions: Sequence[Hashable | None], references: Sequence[Hashable]
) -> tuple[np.ndarray, np.ndarray, int]:
    """Map labels to integer codes shared by both sides: (pred_codes, ref_codes, n_classes).

    References are coded first, so a prediction never seen among the references (`None`
    included) gets a class of its own and is always wrong.
    """
    codes: dict[Hashable | None, int] = {}
    ref_codes = np.fromiter(
        (codes.setdefault(r, len(codes)) for r in references), dtype=np.int64, count=len(references)
    )
    pred_codes = np.fromiter(
        (codes.setdefault(p, len(codes)) for p in predictions),
        dtype=np.int64,
        count=len(predictions),
    )
    return pred_codes, ref_codes, len(codes)


def float_values(name: str, values: Sequence[Any], side: str) -> np.ndarray:
    """`values` as a float array; `ValueError` naming the metric for None, NaN or inf."""
    if any(v is None for v in values):
        raise ValueError(f"metric {name!r}: {side} contain None; apply the fallback first")
    array = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"metric {name!r}: {side} contain NaN or infinite values")
    return array


def class_counts(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Per-row histogram of integer codes: (b, n) -> (b, n_classes)."""
    b = codes.shape[0]
    offsets = (np.arange(b, dtype=np.int64) * n_classes)[:, None]
    flat = np.bincount((codes + offsets).ravel(), minlength=b * n_classes)
    return flat.reshape(b, n_classes).astype(np.float64)


def item_matrix(
    metric: CorpusMetric,
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Any],
    options: MetricOptions,
) -> np.ndarray:
    """(n_templates, n_instances) per-item scores of a mean-of-items metric."""
    rows = [metric.item_scores(p, references, options) for p in predictions]
    return np.vstack([r for r in rows if r is not None])


def per_item_scorer(item_scores: np.ndarray) -> ReplicateScorer:
    """item_scores: (n_templates, n_instances); the metric is the weighted mean."""
    n = item_scores.shape[1]
    transposed = np.ascontiguousarray(item_scores.T)

    def score(_idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return (counts @ transposed) / n

    return score


# Relative tolerance under which a resampled variance counts as zero (constant input).
VARIANCE_RTOL = 1e-10

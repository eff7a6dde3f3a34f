"""Corpus-level metrics: accuracy, MCC, Pearson, Spearman, exact match and F1, as a registry,
and `given_score` / `given_mean` (the mean of per-item scores a source gave, for imported
results: `given.py`; no task file can name them).

Every metric is computed over the whole split (never averaged per sample) and returned on
its natural scale: accuracy, EM and F1 in 0..1 (not 0..100); MCC, Pearson and Spearman in
-1..1.

Degenerate cases (defined here, once, for the whole project):

* Empty input, or predictions and references of different lengths: `ValueError`.
* Pearson / Spearman when either side is constant (or there is a single instance): the
  coefficient is undefined (scipy returns NaN); we return 0.0, the chance level, and
  `compute_detailed` reports `degenerate="constant_predictions"` (or `"constant_references"`,
  `"single_instance"`) so that the result can be recorded as such.
* MCC when either side has a single class: 0.0 (sklearn's convention), also reported as
  degenerate.
* A `None` prediction (the engine applies fallbacks first, so it should not occur) counts
  as a wrong answer for accuracy and MCC (a class of its own that no reference has) and as
  the empty string for EM/F1; Pearson/Spearman reject it with `ValueError`.

Labels are compared with `==` after hashing, so `1` and `"1"` are different labels: the
engine maps parsed answers onto the task's label values before scoring.

EM/F1 follow the reference scorers exactly (SQuAD v1.1 for "en", JGLUE's JSQuAD for
"ja"): see `squad.py`.

A new metric is one module in this folder: a `CorpusMetric` subclass decorated with
`@register` (see `base.py`); the package imports every module in it, so the task files,
the bootstrap and the reports know the metric by its name.

Modules: `accuracy.py`, `mcc.py` (Matthews correlation, sklearn's multiclass formula),
`correlation.py` (Pearson and Spearman, for number answers): one metric each; llm-jp-eval's
metrics of the jaster sets, one each: `llmjp_exact_match.py`, `char_f1.py` (fuzzywuzzy's
`token_sort_ratio`), `set_f1.py`, `exact_match_figure.py` (Nejumi's, MAWPS and MGSM),
`balanced_accuracy.py` (beside exact match for the NLI sets), on what `llmjp.py` shares.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from typing import Any

import numpy as np

from hakari.scoring.corpus.base import (
    AnswerType,
    CorpusMetric,
    Language,
    MetricOptions,
    MetricValue,
    ReplicateScorer,
    encode_labels,
    float_values,
    get,
    names,
    register,
)

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

from hakari.scoring.corpus.squad import normalize_answer, squad_em, squad_f1  # noqa: E402


def options_of(name: str, options: dict[str, Any]) -> MetricOptions:
    """The keyword options of `compute` as `MetricOptions`; `ValueError` naming the metric
    for an unknown option or value."""
    unknown = set(options) - {"lang", "nfkc"}
    if unknown:
        raise ValueError(f"metric {name!r}: unknown option(s) {sorted(unknown)}")
    lang = options.get("lang", "en")
    if lang not in ("en", "ja"):
        raise ValueError(f"metric {name!r}: lang must be 'en' or 'ja', got {lang!r}")
    nfkc = options.get("nfkc", False)
    if not isinstance(nfkc, bool):
        raise ValueError(f"metric {name!r}: nfkc must be a bool, got {nfkc!r}")
    return MetricOptions(lang=lang, nfkc=nfkc)


def _checked(name: str, predictions: Sequence[Any], references: Sequence[Any]) -> CorpusMetric:
    metric = get(name)
    if len(references) == 0:
        raise ValueError(f"metric {name!r}: no instances to score (empty input)")
    if len(predictions) != len(references):
        raise ValueError(
            f"metric {name!r}: {len(predictions)} predictions but {len(references)} references"
        )
    return metric


def compute_detailed(
    name: str, predictions: Sequence[Any], references: Sequence[Any], **options: Any
) -> MetricValue:
    """Like `compute`, but also says whether the value was fixed by a degenerate case."""
    metric = _checked(name, predictions, references)
    return metric.compute(predictions, references, options_of(name, options))


def compute(
    name: str, predictions: Sequence[Any], references: Sequence[Any], **options: Any
) -> float:
    """Corpus-level metric `name` of `predictions` against `references`.

    Options: `lang` ("en" or "ja", EM/F1 only; accepted and ignored by the other metrics so
    that callers can pass a task's language uniformly) and `nfkc` (EM/F1, default False).
    """
    return compute_detailed(name, predictions, references, **options).value


def per_item_scores(
    name: str, predictions: Sequence[Any], references: Sequence[Any], **options: Any
) -> np.ndarray | None:
    """Per-item scores whose mean is the metric (accuracy 0/1, EM 0/1, F1 in 0..1).

    Returns None for the corpus-level metrics (MCC, Pearson, Spearman), which are not means
    of per-item scores.
    """
    metric = _checked(name, predictions, references)
    return metric.item_scores(predictions, references, options_of(name, options))


__all__ = [
    "AnswerType",
    "CorpusMetric",
    "Language",
    "MetricOptions",
    "MetricValue",
    "ReplicateScorer",
    "compute",
    "compute_detailed",
    "encode_labels",
    "float_values",
    "get",
    "names",
    "normalize_answer",
    "options_of",
    "per_item_scores",
    "register",
    "squad_em",
    "squad_f1",
]

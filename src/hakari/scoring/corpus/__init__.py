"""Corpus-level metrics: accuracy, MCC, Pearson, Spearman, exact match and F1.

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

EM/F1 references are, per item, a list of gold answers; the score of an item is the best
over its golds.

* `lang="en"` reproduces the official SQuAD v1.1 evaluation script (`evaluate-v1.1.py`,
  https://rajpurkar.github.io/SQuAD-explorer/): lower-case, drop `string.punctuation`,
  drop the articles a/an/the, collapse whitespace; F1 over whitespace tokens; an empty
  prediction scores F1 0 (no common token), EM 1 only against a gold that normalises to "".
* `lang="ja"` reproduces JGLUE's JSQuAD scorer, i.e. transformers'
  `src/transformers/data/metrics/squad_metrics.py` as patched by
  yahoojapan/JGLUE `fine-tuning/patch/transformers-4.9.2_jglue-1.1.0.patch`
  (same patch for 4.24.0): `remove_articles` becomes `text.rstrip("。")` (every trailing
  "。" goes), `remove_punc` does nothing, the order lower → (no-op) → rstrip → whitespace
  fix is kept, and F1 is computed over the characters of the normalised strings
  (`list(normalize_answer(s))`, spaces included). As in that file's `get_raw_scores`,
  golds that normalise to "" are dropped (if none is left the gold is `[""]`), and when
  either side normalises to "" the F1 is 1 if both do, else 0.

Option `nfkc=True` (default False, which is the reference behaviour) applies Unicode NFKC
to the prediction and to the golds before scoring: the paper's post-processing NFKC-
normalises generated answers, while 252 of the 12,853 JSQuAD v1.1 validation golds change
under NFKC (full-width brackets), so an exact answer can otherwise miss.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, matthews_corrcoef

Lang = Literal["en", "ja"]

METRIC_NAMES: tuple[str, ...] = ("accuracy", "mcc", "pearson", "spearman", "exact_match", "f1")
PER_ITEM_METRICS: frozenset[str] = frozenset({"accuracy", "exact_match", "f1"})
TEXT_METRICS: frozenset[str] = frozenset({"exact_match", "f1"})
_KNOWN_OPTIONS: frozenset[str] = frozenset({"lang", "nfkc"})

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


@dataclass(frozen=True)
class MetricValue:
    """A corpus-level metric value and, when it was defined by convention, why.

    `degenerate` is None for an ordinary value, else one of "constant_predictions",
    "constant_references", "single_instance".
    """

    value: float
    degenerate: str | None = None


# --------------------------------------------------------------------------- SQuAD EM/F1


def normalize_answer(text: str, lang: Lang = "en") -> str:
    """Normalise an answer as the reference scorer of `lang` does (see module docstring)."""
    lowered = text.lower()
    if lang == "en":
        no_punc = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
        return " ".join(_ARTICLES.sub(" ", no_punc).split())
    if lang == "ja":
        return " ".join(lowered.rstrip("。").split())
    raise ValueError(f"unknown lang {lang!r}; expected 'en' or 'ja'")


def _tokens(normalized: str, lang: Lang) -> list[str]:
    return normalized.split() if lang == "en" else list(normalized)


def _token_f1(pred_tokens: list[str], gold_tokens: list[str], lang: Lang) -> float:
    if lang == "ja" and (not pred_tokens or not gold_tokens):
        # transformers' compute_f1: no-answer on either side scores 1 only if both agree.
        return float(pred_tokens == gold_tokens)
    num_same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _prepare(
    pred: str | None, golds: Sequence[str] | str, lang: Lang, nfkc: bool
) -> tuple[str, list[str]]:
    """Normalise the prediction and the golds; apply the JGLUE gold filter for "ja"."""
    if isinstance(golds, str):
        golds = [golds]
    if len(golds) == 0:
        raise ValueError("an item has no gold answer")
    raw_pred = "" if pred is None else pred
    if nfkc:
        raw_pred = unicodedata.normalize("NFKC", raw_pred)
        golds = [unicodedata.normalize("NFKC", g) for g in golds]
    norm_golds = [normalize_answer(g, lang) for g in golds]
    if lang == "ja":
        norm_golds = [g for g in norm_golds if g] or [""]
    return normalize_answer(raw_pred, lang), norm_golds


def squad_em(
    pred: str | None, golds: Sequence[str] | str, lang: Lang = "en", *, nfkc: bool = False
) -> float:
    """Exact match (0.0 or 1.0) of one prediction, best over its gold answers."""
    norm_pred, norm_golds = _prepare(pred, golds, lang, nfkc)
    return float(any(norm_pred == g for g in norm_golds))


def squad_f1(
    pred: str | None, golds: Sequence[str] | str, lang: Lang = "en", *, nfkc: bool = False
) -> float:
    """Token (en) or character (ja) F1 of one prediction, best over its gold answers."""
    norm_pred, norm_golds = _prepare(pred, golds, lang, nfkc)
    pred_tokens = _tokens(norm_pred, lang)
    return max(_token_f1(pred_tokens, _tokens(g, lang), lang) for g in norm_golds)


# --------------------------------------------------------------------------- dispatch


def _check_options(name: str, options: dict[str, Any]) -> tuple[Lang, bool]:
    unknown = set(options) - _KNOWN_OPTIONS
    if unknown:
        raise ValueError(f"metric {name!r}: unknown option(s) {sorted(unknown)}")
    lang = options.get("lang", "en")
    if lang not in ("en", "ja"):
        raise ValueError(f"metric {name!r}: lang must be 'en' or 'ja', got {lang!r}")
    nfkc = options.get("nfkc", False)
    if not isinstance(nfkc, bool):
        raise ValueError(f"metric {name!r}: nfkc must be a bool, got {nfkc!r}")
    return lang, nfkc


def _check_lengths(name: str, predictions: Sequence[Any], references: Sequence[Any]) -> None:
    if name not in METRIC_NAMES:
        raise ValueError(f"unknown metric {name!r}; expected one of {', '.join(METRIC_NAMES)}")
    if len(references) == 0:
        raise ValueError(f"metric {name!r}: no instances to score (empty input)")
    if len(predictions) != len(references):
        raise ValueError(
            f"metric {name!r}: {len(predictions)} predictions but {len(references)} references"
        )


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


def _accuracy(predictions: Sequence[Any], references: Sequence[Any]) -> MetricValue:
    pred_codes, ref_codes, _ = encode_labels(predictions, references)
    return MetricValue(float(accuracy_score(ref_codes, pred_codes)))


def _mcc(predictions: Sequence[Any], references: Sequence[Any]) -> MetricValue:
    pred_codes, ref_codes, _ = encode_labels(predictions, references)
    if np.all(pred_codes == pred_codes[0]):
        return MetricValue(0.0, "constant_predictions")
    if np.all(ref_codes == ref_codes[0]):
        return MetricValue(0.0, "constant_references")
    return MetricValue(float(matthews_corrcoef(ref_codes, pred_codes)))


def _correlation(
    name: str,
    predictions: Sequence[Any],
    references: Sequence[Any],
    statistic: Callable[[np.ndarray, np.ndarray], Any],
) -> MetricValue:
    pred = float_values(name, predictions, "predictions")
    ref = float_values(name, references, "references")
    if len(pred) < 2:
        return MetricValue(0.0, "single_instance")
    if np.all(pred == pred[0]):
        return MetricValue(0.0, "constant_predictions")
    if np.all(ref == ref[0]):
        return MetricValue(0.0, "constant_references")
    return MetricValue(float(statistic(pred, ref).statistic))


def _squad_metric(
    name: str, predictions: Sequence[Any], references: Sequence[Any], lang: Lang, nfkc: bool
) -> MetricValue:
    return MetricValue(float(np.mean(_squad_items(name, predictions, references, lang, nfkc))))


def _squad_items(
    name: str, predictions: Sequence[Any], references: Sequence[Any], lang: Lang, nfkc: bool
) -> np.ndarray:
    item_fn = squad_em if name == "exact_match" else squad_f1
    return np.fromiter(
        (
            item_fn(p, golds, lang, nfkc=nfkc)
            for p, golds in zip(predictions, references, strict=True)
        ),
        dtype=np.float64,
        count=len(references),
    )


def compute_detailed(
    name: str, predictions: Sequence[Any], references: Sequence[Any], **options: Any
) -> MetricValue:
    """Like `compute`, but also says whether the value was fixed by a degenerate case."""
    _check_lengths(name, predictions, references)
    lang, nfkc = _check_options(name, options)
    if name == "accuracy":
        return _accuracy(predictions, references)
    if name == "mcc":
        return _mcc(predictions, references)
    if name == "pearson":
        return _correlation(name, predictions, references, pearsonr)
    if name == "spearman":
        return _correlation(name, predictions, references, spearmanr)
    return _squad_metric(name, predictions, references, lang, nfkc)


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
    _check_lengths(name, predictions, references)
    lang, nfkc = _check_options(name, options)
    if name == "accuracy":
        pred_codes, ref_codes, _ = encode_labels(predictions, references)
        return (pred_codes == ref_codes).astype(np.float64)
    if name in TEXT_METRICS:
        return _squad_items(name, predictions, references, lang, nfkc)
    return None

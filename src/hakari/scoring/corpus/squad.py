"""SQuAD exact match and F1 (0..1): the mean over items of the best score against any of
the item's golds.

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
from collections.abc import Sequence
from typing import Any

import numpy as np

from hakari.results.vocab import Language
from hakari.scoring.corpus.base import CorpusMetric, MetricOptions, register

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str, lang: Language = "en") -> str:
    """Normalise an answer as the reference scorer of `lang` does (see module docstring)."""
    lowered = text.lower()
    if lang == "en":
        no_punc = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
        return " ".join(_ARTICLES.sub(" ", no_punc).split())
    if lang == "ja":
        return " ".join(lowered.rstrip("。").split())
    raise ValueError(f"unknown lang {lang!r}; expected 'en' or 'ja'")


def _tokens(normalized: str, lang: Language) -> list[str]:
    return normalized.split() if lang == "en" else list(normalized)


def _token_f1(pred_tokens: list[str], gold_tokens: list[str], lang: Language) -> float:
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
    pred: str | None, golds: Sequence[str] | str, lang: Language, nfkc: bool
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
    pred: str | None, golds: Sequence[str] | str, lang: Language = "en", *, nfkc: bool = False
) -> float:
    """Exact match (0.0 or 1.0) of one prediction, best over its gold answers."""
    norm_pred, norm_golds = _prepare(pred, golds, lang, nfkc)
    return float(any(norm_pred == g for g in norm_golds))


def squad_f1(
    pred: str | None, golds: Sequence[str] | str, lang: Language = "en", *, nfkc: bool = False
) -> float:
    """Token (en) or character (ja) F1 of one prediction, best over its gold answers."""
    norm_pred, norm_golds = _prepare(pred, golds, lang, nfkc)
    pred_tokens = _tokens(norm_pred, lang)
    return max(_token_f1(pred_tokens, _tokens(g, lang), lang) for g in norm_golds)


class _Squad(CorpusMetric):
    answer_types = frozenset({"text"})
    per_item = True
    value_range = (0.0, 1.0)

    def item(self, prediction: Any, golds: Any, options: MetricOptions) -> float:
        raise NotImplementedError

    def item_scores(
        self, predictions: Sequence[Any], references: Sequence[Any], options: MetricOptions
    ) -> np.ndarray:
        return np.fromiter(
            (
                self.item(p, golds, options)
                for p, golds in zip(predictions, references, strict=True)
            ),
            dtype=np.float64,
            count=len(references),
        )


@register
class ExactMatch(_Squad):
    name = "exact_match"
    description = "SQuAD exact match (en: SQuAD v1.1 script; ja: JGLUE JSQuAD scorer)"

    def item(self, prediction: Any, golds: Any, options: MetricOptions) -> float:
        return squad_em(prediction, golds, options.lang, nfkc=options.nfkc)


@register
class F1(_Squad):
    name = "f1"
    description = "SQuAD token F1 (en: whitespace tokens; ja: characters, JGLUE's scorer)"

    def item(self, prediction: Any, golds: Any, options: MetricOptions) -> float:
        return squad_f1(prediction, golds, options.lang, nfkc=options.nfkc)

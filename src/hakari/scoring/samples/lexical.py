"""Word-overlap scorers: ROUGE (rouge-score) and SQuAD / JSQuAD exact match and token F1.

ROUGE is Google's `rouge-score` package (what HF `evaluate` and IFTEval call). Its default
tokenizer keeps only `[a-z0-9]` and so scores any Japanese pair 0; with `lang="ja"` a
fugashi + unidic-lite word tokenizer is passed as `RougeScorer(tokenizer=...)`.
`rougeLsum` is the summary-level LCS of ROUGE-1.5.5 (sentences are the lines of the text);
`rougeL` treats the whole text as one sequence. The Porter stemmer is off by default, as
in HF `evaluate` (ROUGE-1.5.5's `-m` turns it on: `ScoringConfig.rouge_stemmer`).

Exact match and F1 are hakari's SQuAD v1.1 (en) / JGLUE JSQuAD (ja) scorers from
`hakari.scoring.corpus`, per sample, best over the golds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hakari.errors import HakariInputError
from hakari.results.vocab import Language
from hakari.scoring.corpus import squad_em, squad_f1
from hakari.scoring.samples.registry import MetricInfo, ScoringConfig, register_family

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
_PARTS = {"": "fmeasure", "_precision": "precision", "_recall": "recall"}


class JapaneseTokenizer:
    """MeCab (fugashi) with the unidic-lite dictionary: surface forms, lower-cased."""

    def __init__(self) -> None:
        try:
            import fugashi
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise HakariInputError(
                "Japanese ROUGE needs fugashi and unidic-lite: pip install 'hakari[metrics]'",
                field="--lang",
            ) from exc
        self._tagger = fugashi.Tagger()

    def tokenize(self, text: str) -> list[str]:
        return [w.surface.lower() for w in self._tagger(text) if w.surface.strip()]


def split_rouge_name(name: str) -> tuple[str, str]:
    """`rouge2_recall` → ("rouge2", "recall")."""
    for suffix, part in _PARTS.items():
        if suffix and name.endswith(suffix):
            return name[: -len(suffix)], part
    return name, _PARTS[""]


class RougeFamily:
    family = "rouge"

    def __init__(self, config: ScoringConfig) -> None:
        self.config = config
        self._scorers: dict[tuple[str, ...], Any] = {}

    def _scorer(self, types: tuple[str, ...]) -> Any:
        if types not in self._scorers:
            from rouge_score import rouge_scorer

            tokenizer = JapaneseTokenizer() if self.config.lang == "ja" else None
            self._scorers[types] = rouge_scorer.RougeScorer(
                list(types), use_stemmer=self.config.rouge_stemmer, tokenizer=tokenizer
            )
        return self._scorers[types]

    def score(
        self,
        predictions: Sequence[str],
        references: Sequence[Sequence[str]],
        prompts: Sequence[str] | None,
        metrics: Sequence[str],
    ) -> dict[str, list[float]]:
        wanted = [(m, *split_rouge_name(m)) for m in metrics]
        types = tuple(sorted({t for _, t, _ in wanted}))
        scorer = self._scorer(types)
        out: dict[str, list[float]] = {m: [] for m in metrics}
        for pred, golds in zip(predictions, references, strict=True):
            # score_multi keeps, per ROUGE type, the gold with the best F-measure.
            scores = scorer.score_multi(list(golds), pred)
            for name, rtype, part in wanted:
                out[name].append(float(getattr(scores[rtype], part)))
        return out

    def describe(self) -> dict[str, str]:
        tok = "fugashi+unidic-lite" if self.config.lang == "ja" else "rouge-score default"
        return {
            "package": "rouge-score",
            "tokenizer": tok,
            "stemmer": str(self.config.rouge_stemmer),
        }


class SquadFamily:
    family = "squad"

    def __init__(self, config: ScoringConfig) -> None:
        if config.lang not in ("en", "ja"):
            raise HakariInputError("exact_match / f1 need --lang en or ja", field="--lang")
        self.lang = config.lang

    def score(
        self,
        predictions: Sequence[str],
        references: Sequence[Sequence[str]],
        prompts: Sequence[str] | None,
        metrics: Sequence[str],
    ) -> dict[str, list[float]]:
        lang: Language = "ja" if self.lang == "ja" else "en"
        fns = {"exact_match": squad_em, "f1": squad_f1}
        return {
            m: [fns[m](p, list(g), lang) for p, g in zip(predictions, references, strict=True)]
            for m in metrics
        }

    def describe(self) -> dict[str, str]:
        which = "JGLUE JSQuAD (char F1)" if self.lang == "ja" else "SQuAD v1.1"
        return {"scorer": which}


def _rouge_infos() -> list[MetricInfo]:
    out = []
    for rtype in ROUGE_TYPES:
        for suffix, part in _PARTS.items():
            out.append(MetricInfo(rtype + suffix, "rouge", f"{rtype} {part} (rouge-score)"))
    return out


register_family("rouge", RougeFamily, _rouge_infos())
register_family(
    "squad",
    SquadFamily,
    [
        MetricInfo("exact_match", "squad", "SQuAD v1.1 / JSQuAD exact match, best over golds"),
        MetricInfo("f1", "squad", "SQuAD v1.1 token F1 / JSQuAD char F1, best over golds"),
    ],
)

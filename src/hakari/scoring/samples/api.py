"""Scoring lists of texts with registered metrics: validate, load each model once, score.

`score_texts` is what the `score` command, the run re-scorer and the REALSumm check call.
Names are validated and every model is loaded (`prepare`) before the first sample is
scored, so a missing hub model fails at once with one message rather than after the
cheap metrics ran.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from hakari.errors import HakariInputError
from hakari.scoring.samples.registry import (
    MetricInfo,
    Scorer,
    ScoringConfig,
    build_scorers,
    resolve_metrics,
)


@dataclass
class ScoredTexts:
    values: dict[str, list[float]]
    models: dict[str, dict[str, str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # per family, load + score


def as_reference_lists(references: Sequence[str | Sequence[str]]) -> list[list[str]]:
    """A gold string becomes a one-element list; lists are kept (several golds)."""
    return [[r] if isinstance(r, str) else list(r) for r in references]


class MetricSuite:
    """Resolved metrics and their scorers; models load on `prepare()` (once)."""

    def __init__(self, names: Sequence[str], config: ScoringConfig, *, has_prompts: bool):
        config.check()
        self.infos: list[MetricInfo] = resolve_metrics(names)
        needing = [i.name for i in self.infos if i.needs_prompt]
        if needing and not has_prompts:
            raise HakariInputError(
                f"{', '.join(needing)} score (prompt, answer) pairs: give --prompt-field",
                field="--metrics",
            )
        self.config = config
        self.scorers: dict[str, Scorer] = build_scorers(self.infos, config)

    def prepare(self) -> None:
        for scorer in self.scorers.values():
            prepare = getattr(scorer, "prepare", None)
            if prepare is not None:
                prepare()

    def score(
        self,
        predictions: Sequence[str],
        references: Sequence[str | Sequence[str]],
        prompts: Sequence[str] | None = None,
    ) -> ScoredTexts:
        refs = as_reference_lists(references)
        if len(refs) != len(predictions) or (prompts is not None and len(prompts) != len(refs)):
            raise ValueError("predictions, references and prompts differ in length")
        if any(not golds for golds in refs):
            raise ValueError("a sample has an empty list of references")
        out = ScoredTexts(values={})
        for family, scorer in self.scorers.items():
            names = [i.name for i in self.infos if i.family == family]
            started = time.perf_counter()
            out.values.update(scorer.score(predictions, refs, prompts, names))
            out.seconds[family] = round(time.perf_counter() - started, 3)
            out.models[family] = scorer.describe()
        # Requested order, not family order.
        out.values = {i.name: out.values[i.name] for i in self.infos}
        return out


def score_texts(
    metrics: Sequence[str],
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    prompts: Sequence[str] | None = None,
    config: ScoringConfig | None = None,
) -> ScoredTexts:
    """Per-sample values of every metric in `metrics` (see `hakari.scoring.samples.registry`)."""
    suite = MetricSuite(metrics, config or ScoringConfig(), has_prompts=prompts is not None)
    suite.prepare()
    return suite.score(predictions, references, prompts)

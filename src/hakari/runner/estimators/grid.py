"""The grid of one task × decoding as the estimators read it, whoever filled it: a hakari
run (`task_grid` makes the view of a `Task`) or an importer that builds a `GridTask` and
each model's `Cells` from another harness's results.

The one decision a reader must know: **nothing here needs prompts or a task file.** A
`GridTask` is the task's name, its metrics, its templates in order (with their
prompt-space levels), its items in order with their golds, and for the imputed estimator
the answer type and labels. A metric is a results.json key scored by a registered corpus
metric (`GridMetric.scorer`) from the cells' answers, or, for per-item scores a source
gives (lm-evaluation-harness's per-sample `acc_norm`, a long table's `score`), by
`given_score` (scores in [0, 1]) or `given_mean` (any finite scores) from
`Cells.scores[key]`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hakari.results.vocab import AnswerType, Language
from hakari.scoring import corpus
from hakari.scoring.corpus.given import GIVEN_MEAN, GIVEN_SCORE
from hakari.tasks.loader import Task
from hakari.tasks.prompts import select_templates
from hakari.tasks.space import template_levels

Item = Hashable  # an item's key: a split position in a run, a source's document id
Cell = tuple[str, Item]  # (template id, item key)


@dataclass(frozen=True)
class GridMetric:
    """One metric of a grid: results.json's key, the registered corpus metric that
    scores it and that metric's options (`lang`, `nfkc`)."""

    key: str
    scorer: str
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def given(self) -> bool:
        """Scored from per-item scores a source gave (`Cells.scores[key]`), not answers."""
        return self.scorer in (GIVEN_SCORE, GIVEN_MEAN)


@dataclass(frozen=True)
class GridTask:
    """What the estimators know of a task: see the module docstring.

    `template_ids` and `items` are in the order the statistics use (the bootstrap draws
    positions: the same order for every model); `golds[k]` is item k's gold, read by the
    metrics that score answers (a grid of given scores only may hold None);
    `levels[template id]` maps each dimension of a prompt space to the template's level
    (templates written one by one have none); `source` is the file named in messages."""

    name: str
    metrics: tuple[GridMetric, ...]
    template_ids: tuple[str, ...]
    items: tuple[Item, ...]
    golds: tuple[Any, ...]
    answer_type: AnswerType = "label"
    labels: tuple[Hashable, ...] = ()
    levels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    source: str | None = None

    def __post_init__(self) -> None:
        where = f"grid of task {self.name!r}"
        if not self.metrics or not self.template_ids or not self.items:
            raise ValueError(f"{where}: needs at least one metric, template and item")
        if len(self.golds) != len(self.items):
            raise ValueError(f"{where}: {len(self.golds)} golds for {len(self.items)} items")
        for what, keys in (
            ("template", self.template_ids),
            ("item", self.items),
            ("metric", [m.key for m in self.metrics]),
        ):
            if len(set(keys)) != len(keys):
                raise ValueError(f"{where}: a {what} is given twice")
        for metric in self.metrics:
            corpus.get(metric.scorer)  # a ValueError naming the known metrics
            corpus.options_of(metric.scorer, dict(metric.options))

    @property
    def size(self) -> int:
        """Cells of the full grid: templates × items."""
        return len(self.template_ids) * len(self.items)

    def template_levels(self, template_id: str) -> dict[str, str] | None:
        levels = self.levels.get(template_id)
        return dict(levels) if levels else None


@dataclass
class Cells:
    """One model's cells of a grid: the answers by (template id, item key) — a cell is
    run when it has an answer —, the cells whose answer is the task's fallback (nothing
    parsed), the per-item scores a source gave (metric key → cell → score), and the
    counters results.json records for the decoding."""

    answers: dict[Cell, Any] = field(default_factory=dict)
    fallbacks: set[Cell] = field(default_factory=set)
    scores: dict[str, dict[Cell, float]] = field(default_factory=dict)
    generated: int = 0  # requests sent to the model
    cached: int = 0  # requests answered from the response cache
    refusals: int = 0  # prompts a server gave no text for, however often asked
    redacted_secrets: int = 0  # API keys replaced by *** in the answers
    unreadable_cache_rows: int = 0  # cached rows that could not be read back
    unencodable_answers: int = 0  # answers holding text UTF-8 cannot encode
    constraint_misses: int | None = None  # constrained decoding only
    wall_s: float = 0.0  # seconds

    def add(self, cell: Cell, answer: Any, fallback: bool) -> None:
        self.answers[cell] = answer
        if fallback:
            self.fallbacks.add(cell)


@dataclass(frozen=True)
class FinishOptions:
    """The statistics' options: the Sharpe score's alpha, the bootstrap's replicates (0:
    none, no interval) and seed (the same seed gives every model the same resamples)."""

    alpha: float = 1.0
    n_boot: int = 1000
    seed: int = 0


def metric_options(language: Language, scorer: str, qa_mode: str) -> dict[str, Any]:
    if scorer not in ("exact_match", "f1"):
        return {}
    # Predictions are NFKC-normalised (Appendix B). In first-line mode golds are too:
    # otherwise an exact copy of a gold with full-width brackets (252 JSQuAD golds) could
    # never match. Paper mode compares golds as they are: Appendix B is silent on them.
    return {"lang": language, "nfkc": qa_mode == "first-line"}


def task_grid(
    task: Task, templates: str | Sequence[str], qa_mode: str, items: Sequence[Item],
    golds: Sequence[Any],
) -> GridTask:  # fmt: skip
    """The grid of a hakari task: its selected templates, its metrics scored by
    themselves, the instances a run evaluates (`items`: their split positions)."""
    spec = task.spec
    chosen = select_templates(spec, templates)
    return GridTask(
        name=task.name,
        metrics=tuple(
            GridMetric(str(m), str(m), metric_options(spec.language, str(m), qa_mode))
            for m in spec.metrics
        ),
        template_ids=tuple(t.id for t in chosen),
        items=tuple(items),
        golds=tuple(golds),
        answer_type=spec.answer_type,
        labels=tuple(spec.labels or ()),
        levels=template_levels(spec, (t.id for t in chosen)),
        source=str(task.path),
    )

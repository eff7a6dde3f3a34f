"""The rows both text views of a run show (terminal tables and Markdown): one table per
model × task × decoding (templates, chance, mean / std / min / max / Sharpe with its CI),
the summary rows a paper table needs, and the paired differences. Cells are plain strings;
each view escapes them its own way."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hakari.aggregate.paired import PairedStatistic, Verdict
from hakari.aggregate.summary import AggregateStats
from hakari.results import DecodingResult, EvalResults, TaskResult


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


NEGATIVE_MEAN_MARK = " †"
NEGATIVE_MEAN_NOTE = (
    "† mean < 0: eq. 1 rewards spread here (a larger std brings a negative Sharpe score "
    "closer to 0); compare such models by mean and std, not by Sharpe."
)


def sharpe_text(stats: AggregateStats | None) -> str:
    """The Sharpe score, marked when its aggregate carries the negative-mean caveat."""
    if stats is None:
        return fmt(None)
    mark = NEGATIVE_MEAN_MARK if stats.sharpe_caveat == "negative_mean" else ""
    return fmt(stats.sharpe) + mark


def has_caveat(dec: DecodingResult) -> bool:
    return any(a.sharpe_caveat == "negative_mean" for a in dec.aggregate.values())


def ci_text(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return ""
    return f" [{low:.3f}, {high:.3f}]"


def mean_ci_text(stats: AggregateStats | None) -> str:
    return ci_text(stats.ci_low, stats.ci_high) if stats is not None else ""


def sharpe_ci_text(stats: AggregateStats | None) -> str:
    return ci_text(stats.sharpe_ci_low, stats.sharpe_ci_high) if stats is not None else ""


SPREAD_ROWS: tuple[tuple[str, Callable[[AggregateStats], float]], ...] = (
    ("mean", lambda s: s.mean),
    ("std", lambda s: s.std),
    ("min", lambda s: s.min),
    ("max", lambda s: s.max),
)


def table_rows(task: TaskResult, dec: DecodingResult) -> Iterator[list[str]]:
    metrics = task.metrics
    for template_id, tr in dec.templates.items():
        yield [
            template_id,
            *(fmt(tr.metrics.get(m)) for m in metrics),
            f"{tr.fallback_rate:.1%}",
            str(tr.n),
        ]
    if task.chance:
        yield ["chance", *(fmt(task.chance.get(m)) for m in metrics), "", ""]
    stats = [dec.aggregate.get(m) for m in metrics]
    for label, value in SPREAD_ROWS:
        yield [label, *(fmt(value(s) if s is not None else None) for s in stats), "", ""]
    alpha = stats[0].alpha if stats and stats[0] is not None else 1.0
    yield [f"sharpe (α={alpha:g})", *(sharpe_text(s) for s in stats), "", ""]
    if any(s is not None and s.ci_low is not None for s in stats):
        yield ["mean 95% CI", *(mean_ci_text(s).strip() for s in stats), "", ""]
        yield ["sharpe 95% CI", *(sharpe_ci_text(s).strip() for s in stats), "", ""]


def sections(results: EvalResults) -> Iterator[tuple[str, TaskResult, DecodingResult]]:
    for model, mres in results.models.items():
        for task_name, tres in mres.tasks.items():
            for decoding, dec in tres.decodings.items():
                title = f"{model} · {task_name} · {decoding}"
                yield title, tres, dec


PAIRED_HEADER = [
    "A",
    "B",
    "metric",
    "Δ mean (95% CI)",
    "Δ Sharpe (95% CI)",
    "p (Sharpe)",
    "verdict",
]
VERDICT_TEXT: dict[Verdict, str] = {
    "a_better": "A better",
    "b_better": "B better",
    "inconclusive": "inconclusive",
}


def diff_text(stat: PairedStatistic) -> str:
    return f"{stat.diff:+.3f} [{stat.ci_low:+.3f}, {stat.ci_high:+.3f}]"


def paired_rows(results: EvalResults) -> Iterator[tuple[str, str, list[str]]]:
    """(task, decoding, cells) per paired comparison: A − B on the same templates and
    instances; the verdict reads the Sharpe difference's CI."""
    for task_name, per_dec in (results.paired or {}).items():
        for decoding, comparisons in per_dec.items():
            for c in comparisons:
                yield (
                    task_name,
                    decoding,
                    [
                        c.model_a,
                        c.model_b,
                        c.metric,
                        diff_text(c.mean),
                        diff_text(c.sharpe),
                        f"{c.sharpe.p_value:.3f}",
                        VERDICT_TEXT[c.sharpe.verdict],
                    ],
                )


def summary_rows(results: EvalResults) -> Iterator[list[str]]:
    """One row per model × task × decoding × metric: the numbers a paper table needs."""
    for model, mres in results.models.items():
        for task_name, tres in mres.tasks.items():
            for decoding, dec in tres.decodings.items():
                if dec.skipped or not dec.templates:
                    continue
                fallback = sum(t.fallback_rate for t in dec.templates.values()) / len(dec.templates)
                for metric in tres.metrics:
                    a = dec.aggregate.get(metric)
                    yield [
                        model,
                        task_name,
                        decoding,
                        metric,
                        fmt(a.mean if a else None),
                        fmt(a.std if a else None),
                        sharpe_text(a) + sharpe_ci_text(a),
                        fmt(a.min if a else None) + "–" + fmt(a.max if a else None),
                        fmt(tres.chance.get(metric)),
                        f"{fallback:.1%}",
                    ]


SUMMARY_HEADER = [
    "model",
    "task",
    "decoding",
    "metric",
    "mean",
    "std",
    "Sharpe (95% CI)",
    "min–max",
    "chance",
    "fallback",
]

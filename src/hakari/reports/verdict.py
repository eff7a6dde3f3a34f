"""The verdict of a run in words: which model is better overall, on how many task ×
decoding × metric cells (from the paired comparisons, or the corrected model groups
with three models or more), tied where tied; and the warnings a reader needs before
believing a number: a model below a trivial baseline, a cell won through fallback
answers (outputs that did not parse, scored as the task's fallback)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from hakari.reports.rows import best_baseline, mean_fallback
from hakari.results import EvalResults
from hakari.results.paired import ModelGroups

FALLBACK_WIN = 0.5  # a winner whose outputs fell back this often won by not answering


@dataclass(frozen=True)
class Cell:
    """One task × decoding × metric and its winner (None: no model differs from the
    best one; `top` holds the models tied at the top)."""

    task: str
    decoding: str
    metric: str
    winner: str | None
    top: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.task} · {self.decoding} · {self.metric}"


def _group_winner(groups: ModelGroups) -> str | None:
    """The model every corrected test finds better than each other model, if any."""
    for model in groups.scores:
        beaten = {
            (t.model_b if t.verdict == "a_better" else t.model_a)
            for t in groups.tests
            if (t.model_a == model and t.verdict == "a_better")
            or (t.model_b == model and t.verdict == "b_better")
        }
        if beaten == set(groups.scores) - {model}:
            return model
    return None


def cells(results: EvalResults) -> list[Cell]:
    """Every compared cell, in run order: from `model_groups` where present (three models
    or more, budgeted runs), else from `paired` (two models)."""
    out: list[Cell] = []
    for task, per_dec in (results.model_groups or {}).items():
        for decoding, per_metric in per_dec.items():
            for metric, groups in per_metric.items():
                top = tuple(groups.groups[0]) if groups.groups else ()
                out.append(Cell(task, decoding, metric, _group_winner(groups), top))
    if out:
        return out
    for task, by_decoding in (results.paired or {}).items():
        for decoding, comparisons in by_decoding.items():
            for c in comparisons:
                verdict = c.sharpe.verdict
                winner = {"a_better": c.model_a, "b_better": c.model_b}.get(verdict)
                top = (winner,) if winner else (c.model_a, c.model_b)
                out.append(Cell(task, decoding, c.metric, winner, top))
    return out


@dataclass(frozen=True)
class Decided:
    """What the tests of one task × decoding × metric tell apart: (better, worse) pairs,
    and the models some test compared."""

    better: frozenset[tuple[str, str]]
    compared: frozenset[str]

    def rank(self, model: str) -> int | None:
        """1 + the models found better than `model`; None when no test compared it."""
        if model not in self.compared:
            return None
        return 1 + sum(worse == model for _, worse in self.better)

    def winner(self) -> str | None:
        """The model found better than every other compared model, if any."""
        for model in self.compared:
            if all((model, other) in self.better for other in self.compared - {model}):
                return model
        return None


def decided(results: EvalResults, task: str, decoding: str, metric: str) -> Decided | None:
    """The verdicts on one cell, as `cells` reads them: the corrected tests of
    `model_groups` where present, else the paired comparisons (Sharpe score); None when
    no test covers the cell (one model, no bootstrap, models of separate runs)."""
    groups = (results.model_groups or {}).get(task, {}).get(decoding, {}).get(metric)
    verdicts: list[tuple[str, str, str]]
    if groups is not None:
        verdicts = [(t.model_a, t.model_b, t.verdict) for t in groups.tests]
    else:
        comparisons = (results.paired or {}).get(task, {}).get(decoding, [])
        verdicts = [
            (c.model_a, c.model_b, c.sharpe.verdict) for c in comparisons if c.metric == metric
        ]
    if not verdicts:
        return None
    better = {
        (a, b) if verdict == "a_better" else (b, a)
        for a, b, verdict in verdicts
        if verdict in ("a_better", "b_better")
    }
    return Decided(frozenset(better), frozenset(m for a, b, _ in verdicts for m in (a, b)))


def overall(results: EvalResults, found: list[Cell]) -> str:
    """One sentence: the model better overall (most cells won), or why none is."""
    n = len(found)
    if n == 0:
        why = (
            "the paired comparisons need the bootstrap (--n-boot > 0)"
            if results.config.n_boot == 0
            else "no task × decoding × metric was scored for two models"
        )
        return f"No verdict: {why}."
    wins = Counter(c.winner for c in found if c.winner is not None)
    tied = n - sum(wins.values())
    cells_word = f"{n} task × decoding × metric cell{'s' if n != 1 else ''}"
    if not wins:
        return (
            f"No model is better: the models are tied on all {cells_word} (no Sharpe "
            "difference is significant at 95%)."
        )
    ranked = wins.most_common()
    counts = ", ".join(f"{m} on {k}" for m, k in ranked)
    tail = f"; tied on {tied}" if tied else ""
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return f"No model is better overall: of {cells_word}, better are {counts}{tail}."
    best, k = ranked[0]
    others = [f"{m} on {c}" for m, c in ranked[1:]]
    rest = f"; {', '.join(others)} better" if others else ""
    return f"{best} is better overall: better on {k} of {cells_word}{rest}{tail}."


def warnings(results: EvalResults, found: list[Cell]) -> Iterator[str]:
    """A line per model × task × decoding below a trivial baseline (every metric whose
    mean is), then per cell won mostly through fallback answers."""
    for model, mres in results.models.items():
        for task_name, tres in mres.tasks.items():
            for decoding, dec in tres.decodings.items():
                below = []
                for metric in tres.metrics:
                    stats, base = dec.aggregate.get(metric), best_baseline(tres, metric)
                    if stats is not None and base is not None and stats.mean < base[1]:
                        below.append(f"{metric} {stats.mean:.3f} < {base[0]} {base[1]:.3f}")
                if below:
                    yield (
                        f"{model} is below a trivial baseline on {task_name} · {decoding}: "
                        + "; ".join(below)
                    )
    for cell in found:
        if cell.winner is None:
            continue
        dec = results.models[cell.winner].tasks[cell.task].decodings[cell.decoding]
        rate = mean_fallback(dec) or 0.0
        if rate >= FALLBACK_WIN:
            yield (
                f"{cell.winner} wins {cell.name} with {rate:.0%} fallback answers: its "
                "score comes from outputs that did not parse, not from answering"
            )


def verdict_lines(results: EvalResults) -> list[str]:
    """The verdict paragraph (several models) and the warnings (any run), as lines."""
    found = cells(results)
    lines = [overall(results, found)] if len(results.models) > 1 else []
    return lines + [f"warning: {w}" for w in warnings(results, found)]

"""The tallies and tables of `bench_budget.py`: what each estimate is scored on (errors
against the full grid, coverage and width of its intervals, ranking, which estimator
hakari used) and the markdown tables it prints, one per metric family and source, the
real grids one by one, the skill-server grids per skill level, and the goals."""

from __future__ import annotations

import argparse
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from budget_grids import FullGrid, Scenario, describe

STATS = ("mean", "std", "sharpe")
BUDGETS = (1.0, 2.0, 3.0, 5.0)
ESTIMATORS = ("hakari", "random subset", "random cells", "PromptEval")
ROW_ORDER = (*ESTIMATORS, "full grid")
ACCURACY_TYPE = ("accuracy", "exact_match", "f1")


@dataclass
class Estimate:
    per_template: np.ndarray
    stats: dict[str, float]
    grid_ci: dict[str, tuple[float, float]] | None = None
    pop_ci: dict[str, tuple[float, float]] | None = None
    template_ci: np.ndarray | None = None  # (T, 2) full-grid intervals per template
    plain_mean: float | None = None  # the design-weighted mean of the cells run
    used: str | None = None  # which estimator hakari used (budget.estimator.metrics)


@dataclass
class Tally:
    """Errors and coverage of one (source, budget, estimator, metric family) row."""

    template_errors: list[float] = field(default_factory=list)
    template_cover: list[bool] = field(default_factory=list)
    template_width: list[float] = field(default_factory=list)
    errors: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    signed: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    grid_cover: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    pop_cover: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    grid_width: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    pop_width: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    rank: list[bool] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    plain_signed: list[float] = field(default_factory=list)  # the cells run's mean - truth
    used: Counter[str] = field(default_factory=Counter)
    # simulated grids: does the population interval cover the population value
    population_cover: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))

    def add_population(self, est: Estimate, population: dict[str, float]) -> None:
        if est.pop_ci is None:
            return
        for s in STATS:
            low, high = est.pop_ci[s]
            self.population_cover[s].append(low <= population[s] <= high)

    def add(self, est: Estimate, truth_templates: np.ndarray, truth: dict[str, float]) -> None:
        self.template_errors.extend(np.abs(est.per_template - truth_templates).tolist())
        if est.template_ci is not None:
            lows, highs = est.template_ci[:, 0], est.template_ci[:, 1]
            inside = (lows - 1e-12 <= truth_templates) & (truth_templates <= highs + 1e-12)
            self.template_cover.extend(inside.tolist())
            self.template_width.extend((highs - lows).tolist())
        if est.plain_mean is not None:
            self.plain_signed.append(est.plain_mean - truth["mean"])
        if est.used is not None:
            self.used[est.used] += 1
        for s in STATS:
            self.errors[s].append(abs(est.stats[s] - truth[s]))
            self.signed[s].append(est.stats[s] - truth[s])
            if est.grid_ci is not None:
                low, high = est.grid_ci[s]
                self.grid_cover[s].append(low - 1e-12 <= truth[s] <= high + 1e-12)
                self.grid_width[s].append(high - low)
            if est.pop_ci is not None:
                low, high = est.pop_ci[s]
                self.pop_cover[s].append(low - 1e-12 <= truth[s] <= high + 1e-12)
                self.pop_width[s].append(high - low)


def family(metric: str) -> str:
    return (
        "accuracy-type (accuracy, EM, F1)"
        if metric in ACCURACY_TYPE
        else "corpus (MCC, Pearson, Spearman)"
    )


Tallies = dict[tuple[str, str, float, str], Tally]  # (family, source, budget, estimator)
# real grids one by one: (grid, metric, budget, estimator)
BY_GRID: dict[tuple[str, str, float, str], Tally] = defaultdict(Tally)


def _q(values: Sequence[float], q: float) -> float:
    return float(np.quantile(values, q)) if len(values) else math.nan


def _signed(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:+.4f}"


def _fmt(value: float, digits: int = 3) -> str:
    return (
        "—"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{value:.{digits}f}"
    )


def print_tables(tallies: Tallies, args: argparse.Namespace) -> None:
    header = (
        "| source | budget | estimator | template err med / p95 | mean err med / p95 | "
        "std err med / p95 | std signed err med | Sharpe err med / p95 | "
        "Sharpe signed err med | Sharpe cov grid / pop | "
        "Sharpe CI width grid / pop | mean cov grid / pop | rank (n) | s/fit |"
    )
    for fam in sorted({k[0] for k in tallies}):
        print(f"\n### {fam}\n")
        print(header)
        print("|" + "---|" * 14)
        for (f, source, budget, name), t in sorted(
            tallies.items(), key=lambda kv: (kv[0][1], kv[0][2], ROW_ORDER.index(kv[0][3]))
        ):
            if f != fam or not t.template_errors:
                continue
            cells = [
                source,
                f"{budget:g}x",
                name,
                f"{_fmt(_q(t.template_errors, 0.5))} / {_fmt(_q(t.template_errors, 0.95))}",
            ]
            for s in STATS:
                cells.append(f"{_fmt(_q(t.errors[s], 0.5))} / {_fmt(_q(t.errors[s], 0.95))}")
                if s != "mean":
                    cells.append(_signed(_q(t.signed[s], 0.5)))
            cov = lambda xs: _fmt(float(np.mean(xs)), 2) if xs else "—"  # noqa: E731
            width = lambda xs: _fmt(float(np.mean(xs))) if xs else "—"  # noqa: E731
            cells.append(f"{cov(t.grid_cover['sharpe'])} / {cov(t.pop_cover['sharpe'])}")
            cells.append(f"{width(t.grid_width['sharpe'])} / {width(t.pop_width['sharpe'])}")
            cells.append(f"{cov(t.grid_cover['mean'])} / {cov(t.pop_cover['mean'])}")
            cells.append(f"{cov(t.rank)} ({len(t.rank)})" if t.rank else "—")
            cells.append(_fmt(float(np.mean(t.seconds)), 2))
            print("| " + " | ".join(cells) + " |")


def _template_and_sharpe(t: Tally) -> str:
    """The summary's middle cells: per-template error and interval, the Sharpe error, the
    std's signed error, the Sharpe intervals' coverage and width."""
    cov = lambda xs: _fmt(float(np.mean(xs)), 2) if xs else "—"  # noqa: E731
    width = lambda xs: _fmt(float(np.mean(xs))) if xs else "—"  # noqa: E731
    return (
        f"{_fmt(_q(t.template_errors, 0.5))} / {_fmt(_q(t.template_errors, 0.95))} | "
        f"{cov(t.template_cover)} / {width(t.template_width)} | "
        f"{_fmt(_q(t.errors['sharpe'], 0.5))} / {_fmt(_q(t.errors['sharpe'], 0.95))} | "
        f"{_signed(_q(t.signed['std'], 0.5))} | "
        f"{cov(t.grid_cover['sharpe'])} / {cov(t.pop_cover['sharpe'])} | "
        f"{width(t.grid_width['sharpe'])} / {width(t.pop_width['sharpe'])}"
    )


def print_summary(tallies: Tallies) -> None:
    """The compact table the README shows: accuracy-type metrics, the Sharpe score."""
    fam = family("accuracy")
    print(f"\n### Summary: {fam}, Sharpe score\n")
    print(
        "| source | budget | estimator | per-template err med / p95 | per-template cov / width | "
        "Sharpe err med / p95 | std signed err med | Sharpe cov grid / pop | "
        "Sharpe CI width grid / pop | rank agrees (n) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    cov = lambda xs: _fmt(float(np.mean(xs)), 2) if xs else "—"  # noqa: E731
    for (f, source, budget, name), t in sorted(
        tallies.items(), key=lambda kv: (kv[0][1], kv[0][2], ROW_ORDER.index(kv[0][3]))
    ):
        if f != fam or not t.template_errors:
            continue
        print(
            f"| {source} | {budget:g}x | {name} | "
            f"{_template_and_sharpe(t)} | "
            + (f"{cov(t.rank)} ({len(t.rank)})" if t.rank else "—")
            + " |"
        )


def print_population(tallies: Tallies) -> None:
    rows = [(k, t) for k, t in tallies.items() if t.population_cover]
    if not rows:
        return
    print("\n### Simulated grids: coverage of the population value (a full run's target)\n")
    print("| metrics | budget | estimator | mean | std | Sharpe | n |")
    print("|---|---|---|---|---|---|---|")
    for (fam, _source, budget, name), t in sorted(
        rows, key=lambda kv: (kv[0][0], kv[0][2], ROW_ORDER.index(kv[0][3]))
    ):
        cov = [f"{np.mean(t.population_cover[s]):.2f}" for s in STATS]
        label = "full" if math.isinf(budget) else f"{budget:g}x"
        print(
            f"| {fam} | {label} | {name} | {' | '.join(cov)} | {len(t.population_cover['mean'])} |"
        )


def print_by_grid(budget: float) -> None:
    """The real grids one by one at one budget: where a goal is missed, which grid."""
    rows = [(k, t) for k, t in BY_GRID.items() if k[2] == budget]
    if not rows:
        return
    print(f"\n### Real grids one by one at {budget:g}x\n")
    print(
        "| grid | metric | estimator | template err med / p95 | template cov / width | "
        "Sharpe err med / p95 | std signed err med | Sharpe cov grid / pop | "
        "Sharpe CI width grid / pop | estimator used |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (grid, metric, _budget, name), t in sorted(
        rows, key=lambda kv: (kv[0][0], kv[0][1], ROW_ORDER.index(kv[0][3]))
    ):
        print(f"| {grid} | {metric} | {name} | {_template_and_sharpe(t)} | {_used(t)} |")


def print_goals(tallies: Tallies) -> None:
    """Issue 25's goals at 2x, accuracy-type metrics, per source."""
    print("\n### Goals at 2x (accuracy-type metrics)\n")
    print(
        "| source | Sharpe err median ≤ 0.012 | Sharpe err p95 ≤ 0.04 | "
        "Sharpe grid coverage ≥ 0.93 (pop) | Sharpe grid CI median width ≤ 0.07 | "
        "std signed err median within ±0.005 | template err vs random subset |"
    )
    print("|---|---|---|---|---|---|---|")
    fam = family("accuracy")
    mark = lambda ok: "met" if ok else "MISSED"  # noqa: E731
    for source in sorted({k[1] for k in tallies}):
        ours = tallies.get((fam, source, 2.0, "hakari"))
        base = tallies.get((fam, source, 2.0, "random subset"))
        if ours is None or not ours.errors["sharpe"]:
            continue
        med, p95 = _q(ours.errors["sharpe"], 0.5), _q(ours.errors["sharpe"], 0.95)
        grid_cov = float(np.mean(ours.grid_cover["sharpe"]))
        pop_cov = float(np.mean(ours.pop_cover["sharpe"])) if ours.pop_cover["sharpe"] else math.nan
        width = _q(ours.grid_width["sharpe"], 0.5)
        signed = _q(ours.signed["std"], 0.5)
        ratio = "—"
        if base is not None:
            ours_err, base_err = _q(ours.template_errors, 0.5), _q(base.template_errors, 0.5)
            ratio = (
                f"{ours_err:.4f} vs {base_err:.4f}: {100 * (1 - ours_err / base_err):.0f}% lower"
            )
        print(
            f"| {source} | {med:.4f} {mark(med <= 0.012)} | {p95:.4f} {mark(p95 <= 0.04)} | "
            f"{grid_cov:.2f} ({pop_cov:.2f}) {mark(grid_cov >= 0.93)} | "
            f"{width:.3f} {mark(width <= 0.07)} | {signed:+.4f} {mark(abs(signed) <= 0.005)} | "
            f"{ratio} |"
        )


def print_features(
    real: Sequence[FullGrid], simulated: Sequence[tuple[Scenario, FullGrid]]
) -> None:
    print("\n### Grids: size and the features the simulation is calibrated on\n")
    print(
        "| grid | source | templates × instances | mean | std over templates | "
        "top-answer share | ICC of correctness |"
    )
    print("|---|---|---|---|---|---|---|")
    rows = [(g.name, g.source, g) for g in real] + [(s.name, "simulated", g) for s, g in simulated]
    for name, source, g in rows:
        f = describe(g)
        print(
            f"| {name} | {source} | {g.shape[0]} × {g.shape[1]} | {f['mean']:.3f} | "
            f"{f['std']:.3f} | {_fmt(f.get('top_answer_share', math.nan), 2)} | "
            f"{_fmt(f.get('icc', math.nan), 2)} |"
        )


def _used(t: Tally) -> str:
    """Which estimator hakari used, how often ("imputation 8, design 2")."""
    short = {
        "latent-class multiple imputation": "imputation",
        "design-weighted cell mean": "design",
    }
    return ", ".join(f"{short.get(name, name)} {n}" for name, n in t.used.most_common()) or "—"


def print_skill(tallies: Tallies, budget: float = 2.0) -> None:
    """Issue 38's table: per skill level (and the fake grids), coverage of the full-grid
    mean, std and Sharpe by hakari's full-grid intervals, and the estimate's mean error
    against the design-weighted mean of the cells run (signed: the bias; absolute)."""
    fam = family("accuracy")
    rows = [
        (source, t)
        for (f, source, b, name), t in sorted(tallies.items())
        if f == fam
        and b == budget
        and name == "hakari"
        and (source.startswith("skill") or source == "fake")
    ]
    if not rows:
        return
    print(f"\n### Skill-server and fake grids at {budget:g}x: coverage and mean error\n")
    print(
        "| grids | runs | full-grid coverage mean / std / Sharpe | mean err signed: hakari / "
        "cells run | mean abs err: hakari / cells run | Sharpe err med / p95 | "
        "Sharpe CI width | estimator used |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for source, t in rows:
        cov = " / ".join(f"{np.mean(t.grid_cover[s]):.2f}" for s in STATS)
        signed = np.asarray(t.signed["mean"])
        plain = np.asarray(t.plain_signed)
        used = _used(t)
        print(
            f"| {source} | {signed.size} | {cov} | {signed.mean():+.4f} / {plain.mean():+.4f} | "
            f"{np.abs(signed).mean():.4f} / {np.abs(plain).mean():.4f} | "
            f"{_fmt(_q(t.errors['sharpe'], 0.5))} / {_fmt(_q(t.errors['sharpe'], 0.95))} | "
            f"{_fmt(_q(t.grid_width['sharpe'], 0.5))} | {used} |"
        )

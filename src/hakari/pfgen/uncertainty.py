"""Honest uncertainty for a pfgen-bench score.

The reference's `score_std` pairs the i-th *sorted* answer of every question into a
pseudo-trial (files are byte-sorted, so empty answers all land in the first pseudo-trials).
It is kept for parity. Here the real trials are used instead when they can be recovered
(a `trial` field or timestamps): the between-trial std, its standard error and a
percentile bootstrap CI over trials. Trials share their few-shot example order and seed
across questions, so resampling whole trials keeps that within-trial correlation; the
per-question-independent SE, which ignores it, is reported beside it for comparison.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hakari._util import checks
from hakari.pfgen.trials import identify_trials


@dataclass(frozen=True)
class QuestionSpread:
    n: int
    mean: float
    std: float  # sample std (ddof=1) of the per-answer averages; 0 for one answer
    se: float


@dataclass(frozen=True)
class Uncertainty:
    trials_identified: bool
    trial_method: str | None
    reason: str | None
    num_trials: int
    trial_mean: float | None
    trial_std: float | None  # sample std (ddof=1) of the true trial means
    trial_std_population: float | None  # ddof=0, comparable with the published std
    standard_error: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    bootstrap_resamples: int
    independent_se: float  # sqrt(sum_q var_q / n_q) / Q, questions assumed independent
    between_question_std: float  # std of the per-question means

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def question_spread(averages: list[float]) -> QuestionSpread:
    values = np.asarray(averages, dtype=np.float64)
    std = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    return QuestionSpread(len(values), float(values.mean()), std, std / math.sqrt(len(values)))


def trial_means(rows: list[dict[str, Any]], labels: list[int]) -> np.ndarray:
    """Mean over questions of each trial's per-answer averages, in trial-label order."""
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for row, label in zip(rows, labels, strict=True):
        sums[label] = sums.get(label, 0.0) + row["scores"]["average"]
        counts[label] = counts.get(label, 0) + 1
    return np.array([sums[k] / counts[k] for k in sorted(sums)], dtype=np.float64)


def check_bootstrap(resamples: int, seed: int, n_trials: int = 0) -> None:
    """`--bootstrap` (≥ 1, and its resamples of `n_trials` trials within memory) and
    `--seed` (≥ 0)."""
    checks.integer(resamples, "--bootstrap", low=1)
    checks.seed(seed)
    needed = bootstrap_bytes(resamples, n_trials)
    checks.fits_in_memory(needed, "--bootstrap", resamples, "the bootstrap resamples")


def bootstrap_bytes(resamples: int, n_trials: int) -> int:
    """The resampled trial indices, the trial means they pick, and one mean per resample."""
    return 8 * resamples * (2 * n_trials + 1)


def bootstrap_ci(
    means: np.ndarray, *, resamples: int, confidence: float, seed: int
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of `means` (resampling trials)."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(means), size=(resamples, len(means)))
    boot = means[picks].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    return float(low), float(high)


def estimate(
    by_question: dict[str, list[dict[str, Any]]],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Uncertainty:
    """Uncertainty of one scored file (`by_question`: rows with `scores`, file order)."""
    check_bootstrap(resamples, seed)
    rows = [r for qid in sorted(by_question) for r in by_question[qid]]
    spreads = [
        question_spread([r["scores"]["average"] for r in by_question[q]]) for q in by_question
    ]
    independent = math.sqrt(sum(s.std**2 / s.n for s in spreads)) / len(spreads)
    between = float(np.std([s.mean for s in spreads], ddof=1)) if len(spreads) > 1 else 0.0
    ids = identify_trials(rows)
    empty = dict(
        trial_mean=None,
        trial_std=None,
        trial_std_population=None,
        standard_error=None,
        ci_low=None,
        ci_high=None,
    )
    if ids.labels is None:
        return Uncertainty(
            False, None, ids.reason, 0, confidence=confidence, bootstrap_resamples=0,
            independent_se=independent, between_question_std=between, **empty,
        )  # fmt: skip
    means = trial_means(rows, ids.labels)
    if len(means) < 2:
        return Uncertainty(
            True, ids.method, "a single trial: no between-trial spread", len(means),
            confidence=confidence, bootstrap_resamples=0, independent_se=independent,
            between_question_std=between, **{**empty, "trial_mean": float(means.mean())},
        )  # fmt: skip
    std = float(means.std(ddof=1))
    check_bootstrap(resamples, seed, len(means))
    low, high = bootstrap_ci(means, resamples=resamples, confidence=confidence, seed=seed)
    return Uncertainty(
        trials_identified=True,
        trial_method=ids.method,
        reason=None,
        num_trials=len(means),
        trial_mean=float(means.mean()),
        trial_std=std,
        trial_std_population=float(means.std(ddof=0)),
        standard_error=std / math.sqrt(len(means)),
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        bootstrap_resamples=resamples,
        independent_se=independent,
        between_question_std=between,
    )

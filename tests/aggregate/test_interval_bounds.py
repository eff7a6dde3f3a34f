"""Intervals respect their quantity's range (issue 17 §4): on a `--limit 4` run the
studentised intervals went below 0 for a std and an accuracy Sharpe score; they are now
cut to the range, the cut ends are named in results.json (`ci_clipped`), and the point
estimates are eq. 1 exactly as before."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from hakari.aggregate import aggregate, paired_bootstrap
from hakari.aggregate.intervals import Interval, difference_bounds, statistic_bounds
from hakari.backends.fake import FakeBackend, hash_choice
from hakari.runner import evaluate

ANSWERS = ["0", "1", "A", "B", "positive", "negative", "yes", "no", "?"]
CI_KEYS = {
    "mean": ("ci_low", "ci_high"),
    "std": ("std_ci_low", "std_ci_high"),
    "sharpe": ("sharpe_ci_low", "sharpe_ci_high"),
}
RANGES = {"accuracy": (0.0, 1.0), "mcc": (-1.0, 1.0)}


def test_ranges_of_the_statistics() -> None:
    assert statistic_bounds((0.0, 1.0)) == {"mean": (0, 1), "std": (0, 0.5), "sharpe": (0, 1)}
    assert statistic_bounds((-1.0, 1.0)) == {"mean": (-1, 1), "std": (0, 1), "sharpe": (-1, 1)}
    assert difference_bounds((0.0, 1.0)) == {
        "mean": (-1, 1),
        "std": (-0.5, 0.5),
        "sharpe": (-1, 1),
    }
    unbounded = statistic_bounds((-math.inf, math.inf))
    assert unbounded["std"] == (0.0, math.inf)  # a std is never below 0


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.2, 0.4, Interval(0.2, 0.4)),
        (-0.1, 0.4, Interval(0.0, 0.4, ("low",))),
        (0.3, 1.2, Interval(0.3, 1.0, ("high",))),
        (-0.5, 1.5, Interval(0.0, 1.0, ("low", "high"))),
        (1.1, 1.3, Interval(1.0, 1.0, ("low", "high"))),  # wholly outside: the bound
    ],
)
def test_interval_is_cut_to_its_bounds(low: float, high: float, expected: Interval) -> None:
    assert Interval.within(low, high, (0.0, 1.0)) == expected


def test_cutting_never_changes_whether_a_value_in_range_is_covered() -> None:
    rng = np.random.default_rng(0)
    for _ in range(2000):
        low, high = np.sort(rng.uniform(-0.5, 1.5, 2))
        truth = rng.uniform(0.0, 1.0)
        cut = Interval.within(low, high, (0.0, 1.0))
        assert (low <= truth <= high) == (cut.low <= truth <= cut.high)


def _limit_4_run(tmp_path: Path, salt: int) -> dict:
    backend = FakeBackend(lambda r: hash_choice(f"{salt}{r.prompt}{r.regex}", ANSWERS))
    out = tmp_path / f"run{salt}"
    evaluate(
        tasks=["demo_sentiment_en"],
        decodings=["greedy"],
        limit=4,
        n_boot=1000,
        use_cache=False,
        output_dir=out,
        backend_factory=lambda spec: backend,
    )
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_limit_4_intervals_stay_in_range_and_say_where_they_were_cut(tmp_path: Path) -> None:
    """Salts 0, 2, 3, 5 gave a std interval below 0 or an accuracy Sharpe / mean interval
    below 0 before; salt 1 and 4 were in range already."""
    clipped_somewhere = []
    for salt in range(6):
        results = _limit_4_run(tmp_path, salt)
        (model,) = results["models"].values()
        decoding = model["tasks"]["demo_sentiment_en"]["decodings"]["greedy"]
        for metric, agg in decoding["aggregate"].items():
            bounds = statistic_bounds(RANGES[metric])
            for stat, (low_key, high_key) in CI_KEYS.items():
                floor, ceiling = bounds[stat]
                assert floor <= agg[low_key] <= agg[high_key] <= ceiling, (salt, metric, stat)
            # point estimates: eq. 1 on the observed templates, as before
            per_template = {t: r["metrics"][metric] for t, r in decoding["templates"].items()}
            point = aggregate(per_template, alpha=agg["alpha"])
            assert (agg["mean"], agg["std"], agg["sharpe"]) == (point.mean, point.std, point.sharpe)
            assert set(agg["ci_clipped"]) <= {f"{s}_{e}" for s in CI_KEYS for e in ("low", "high")}
            clipped_somewhere += [(salt, metric, end) for end in agg["ci_clipped"]]
    assert {salt for salt, _, _ in clipped_somewhere} >= {0, 2, 3, 5}
    assert (3, "accuracy", "std_low") in clipped_somewhere


def test_paired_intervals_stay_in_the_range_of_a_difference() -> None:
    rng = np.random.default_rng(3)
    golds = [0, 1, 1, 0]
    predictions = {
        model: {f"{t}-0": rng.integers(0, 2, 4).tolist() for t in range(8)} for model in "ab"
    }
    for metric in ("accuracy", "mcc"):
        (comparison,) = paired_bootstrap(predictions, golds, metric, n_boot=500, seed=1)
        bounds = difference_bounds(RANGES[metric])
        for name in ("mean", "sharpe"):
            stat = getattr(comparison, name)
            assert bounds[name][0] <= stat.ci_low <= stat.ci_high <= bounds[name][1]
            assert stat.diff == stat.a - stat.b

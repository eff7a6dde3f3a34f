"""The studentised two-way bootstrap interval and the paired comparison of models."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import sem

from hakari.aggregate import aggregate, bootstrap, paired_bootstrap
from hakari.aggregate.intervals import Replicates, template_se, template_statistics
from hakari.aggregate.resampling import replicate_statistics
from hakari.scoring import corpus

# ----------------------------------------------------------------------------- influences


def test_template_statistics_hand_computed() -> None:
    x = np.array([0.5, 0.7, 0.9, 0.3])
    stats = template_statistics(x, alpha=1.0)
    mean, infl_mean = stats["mean"]
    std, infl_std = stats["std"]
    sharpe, _ = stats["sharpe"]
    assert mean == pytest.approx(0.6) and std == pytest.approx(math.sqrt(0.05))
    assert sharpe == pytest.approx(aggregate({str(i): v for i, v in enumerate(x)}).sharpe)
    np.testing.assert_allclose(infl_mean, [-0.1, 0.1, 0.3, -0.3], atol=1e-15)
    # the mean's standard error is the textbook one, s_(ddof=1) / sqrt(T)
    assert template_se(infl_mean) == pytest.approx(sem(x))
    # influence of the population std: ((x - m)^2 - s^2) / (2 s)
    np.testing.assert_allclose(infl_std, (infl_mean**2 - 0.05) / (2 * math.sqrt(0.05)))


@pytest.mark.parametrize("alpha", [0.0, 1.0, 2.0])
def test_sharpe_influence_is_the_derivative_towards_each_template(alpha: float) -> None:
    # The empirical influence of template t: d/de of the statistic of the weighted sample
    # (1 - e) * uniform + e * point mass at t.
    x = np.array([0.42, 0.55, 0.61, 0.38, 0.70, 0.49])
    _, influence = template_statistics(x, alpha)["sharpe"]

    def weighted_sharpe(w: np.ndarray) -> float:
        m = float(w @ x)
        s = math.sqrt(float(w @ (x - m) ** 2))
        return m / (alpha * s + 1)

    uniform = np.full(len(x), 1 / len(x))
    eps = 1e-7
    for t in range(len(x)):
        towards = (1 - eps) * uniform + eps * np.eye(len(x))[t]
        numeric = (weighted_sharpe(towards) - weighted_sharpe(uniform)) / eps
        assert influence[t] == pytest.approx(numeric, abs=1e-5)


def test_one_template_has_no_template_standard_error() -> None:
    assert template_se(np.array([[0.3]])) == pytest.approx([0.0])


# ----------------------------------------------------------------------------- the interval


def _replicates(**kw: object) -> Replicates:
    base = dict(
        point=0.5,
        point_se=0.1,
        values=np.array([0.3, 0.4, 0.5, 0.6, 0.9]),
        values_se=np.full(5, 0.1),
        instance_values=np.full(5, 0.5),
    )
    base.update(kw)
    return Replicates(**base)  # type: ignore[arg-type]


def test_studentized_interval_hand_computed() -> None:
    # t* = (values - 0.5) / 0.1 = [-2, -1, 0, 1, 4]; with confidence 0.5 the linear
    # quantiles at 0.25 and 0.75 are exactly -1 and 1: [0.5 - 1 * 0.1, 0.5 + 1 * 0.1].
    reps = _replicates()
    low, high = reps.interval("studentized", 0.5)
    assert (low, high) == pytest.approx((0.4, 0.6))
    # confidence 0.8: quantiles 0.1 and 0.9 -> t -1.6 and 2.8, and the interval is
    # reflected: the long upper tail of t* widens the LOWER side.
    low, high = reps.interval("studentized", 0.8)
    assert (low, high) == pytest.approx((0.5 - 2.8 * 0.1, 0.5 + 1.6 * 0.1))
    # the percentile interval reads the values directly: 0.34 and 0.78
    assert reps.interval("percentile", 0.8) == pytest.approx((0.34, 0.78))


def test_studentized_interval_adds_the_instance_variance() -> None:
    # instance-only replicates 0.47 / 0.53: variance 0.0009 joins both standard errors.
    reps = _replicates(instance_values=np.array([0.47, 0.53]))
    se = math.sqrt(0.01 + 0.0009)
    t_star = (np.array([0.3, 0.4, 0.5, 0.6, 0.9]) - 0.5) / se
    q_low, q_high = np.quantile(t_star, [0.25, 0.75])
    assert reps.interval("studentized", 0.5) == pytest.approx((0.5 - q_high * se, 0.5 - q_low * se))


def test_studentized_interval_degenerate_cases() -> None:
    # a replicate whose resampled templates all tie (se* = 0) carries no pivot: left out
    reps = _replicates(values_se=np.array([0.1, 0.1, 0.0, 0.1, 0.1]))
    t_star = np.array([-2.0, -1.0, 1.0, 4.0])
    q_low, q_high = np.quantile(t_star, [0.25, 0.75])
    assert reps.interval("studentized", 0.5) == pytest.approx(
        (0.5 - q_high * 0.1, 0.5 - q_low * 0.1)
    )
    # no standard error at all: the percentile interval
    flat = _replicates(point_se=0.0, values_se=np.zeros(5))
    assert flat.interval("studentized", 0.5) == flat.interval("percentile", 0.5)
    with pytest.raises(ValueError, match="unknown CI method"):
        reps.interval("bca", 0.95)


def test_bootstrap_records_its_method_and_percentile_stays_available() -> None:
    rng = np.random.default_rng(3)
    refs = [1] * 80
    preds = {f"{t}-0": list((rng.random(80) < 0.4 + 0.05 * t).astype(int)) for t in range(8)}
    new = bootstrap(preds, refs, "accuracy", n_boot=300, seed=1)
    old = bootstrap(preds, refs, "accuracy", n_boot=300, seed=1, ci_method="percentile")
    assert new.stats.ci_method == "studentized"
    assert old.stats.ci_method == "percentile"
    # same replicates, different reading of them
    np.testing.assert_array_equal(new.replicate_sharpes, old.replicate_sharpes)
    _, reps = replicate_statistics(preds, refs, "accuracy", alpha=1.0, n_boot=300, seed=1)
    assert new.sharpe_ci == reps["sharpe"].interval("studentized", 0.95)
    assert old.sharpe_ci == reps["sharpe"].interval("percentile", 0.95)
    with pytest.raises(ValueError, match="unknown CI method"):
        bootstrap(preds, refs, "accuracy", ci_method="bca")


def test_coverage_sanity_with_few_templates() -> None:
    # A miniature of benchmarks/bench_ci_coverage.py (templates dominate, 8 templates):
    # the percentile interval is too narrow, the studentised one is not.
    rng = np.random.default_rng(0)
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    per_template = expit(0.5 + nodes[:, None] + 1.5 * nodes[None, :]) @ weights
    mu = weights @ per_template
    truth = mu / (math.sqrt(weights @ (per_template - mu) ** 2) + 1)
    refs = [1] * 200
    hits = {"studentized": 0, "percentile": 0}
    datasets = 400
    for d in range(datasets):
        u, v = rng.normal(0, 1.0, 8), rng.normal(0, 1.5, 200)
        correct = rng.random((8, 200)) < expit(0.5 + u[:, None] + v)
        preds = {str(t): row.astype(int).tolist() for t, row in enumerate(correct)}
        _, reps = replicate_statistics(preds, refs, "accuracy", alpha=1.0, n_boot=300, seed=d)
        for method in hits:
            low, high = reps["sharpe"].interval(method, 0.95)
            hits[method] += int(low <= truth <= high)
    assert hits["studentized"] / datasets >= 0.92
    assert hits["percentile"] < hits["studentized"]


# ----------------------------------------------------------------------------- paired


def _two_models(
    n: int = 150, templates: int = 5
) -> tuple[dict[str, dict[str, list[int]]], list[int]]:
    rng = np.random.default_rng(21)
    refs = list(rng.integers(0, 2, size=n))
    models: dict[str, dict[str, list[int]]] = {}
    for name, skill in (("strong", 0.85), ("weak", 0.6), ("mid", 0.7)):
        models[name] = {}
        for t in range(templates):
            keep = rng.random(n) < skill - 0.04 * t
            models[name][f"{t}-0"] = [r if k else 1 - r for r, k in zip(refs, keep, strict=True)]
    return models, refs


def test_template_intervals_are_the_instance_bootstrap_of_each_template() -> None:
    """A template's interval is the percentile interval of its score over the replicates'
    instance resamples: for accuracy, close to the normal interval of a proportion."""
    rng = np.random.default_rng(3)
    n = 600
    golds = rng.integers(0, 2, size=n).tolist()
    right = {"a": 0.7, "b": 0.55, "c": 0.9}
    preds = {t: [g if rng.random() < p else 1 - g for g in golds] for t, p in right.items()}
    result = bootstrap(preds, golds, "accuracy", n_boot=2000, seed=5)
    intervals = result.template_intervals()
    assert list(intervals) == ["a", "b", "c"]
    every = result.replicates.every
    for i, (template, interval) in enumerate(intervals.items()):
        np.testing.assert_allclose(
            [interval.low, interval.high], np.quantile(every[:, i], [0.025, 0.975]), rtol=1e-12
        )
        p = result.per_template[template]
        half = 1.96 * math.sqrt(p * (1 - p) / n)
        assert interval.low == pytest.approx(p - half, abs=0.008)
        assert interval.high == pytest.approx(p + half, abs=0.008)
        assert 0.0 <= interval.low <= p <= interval.high <= 1.0


def test_template_intervals_leave_out_undefined_replicates() -> None:
    from hakari.aggregate.intervals import template_intervals

    every = np.array([[0.1, np.nan], [0.3, np.nan], [0.2, np.nan]])
    intervals = template_intervals(["x", "y"], every, confidence=0.5)
    assert list(intervals) == ["x"]  # y has no defined replicate: no interval
    assert (intervals["x"].low, intervals["x"].high) == pytest.approx((0.15, 0.25))


def test_paired_difference_equals_difference_of_point_estimates() -> None:
    models, refs = _two_models()
    comparisons = paired_bootstrap(models, refs, "mcc", alpha=1.0, n_boot=200, seed=4)
    assert [(c.model_a, c.model_b) for c in comparisons] == [
        ("strong", "weak"),
        ("strong", "mid"),
        ("weak", "mid"),
    ]
    for c in comparisons:
        a = aggregate({t: corpus.compute("mcc", p, refs) for t, p in models[c.model_a].items()})
        b = aggregate({t: corpus.compute("mcc", p, refs) for t, p in models[c.model_b].items()})
        assert (c.mean.a, c.mean.b, c.mean.diff) == (a.mean, b.mean, a.mean - b.mean)
        assert (c.sharpe.a, c.sharpe.b, c.sharpe.diff) == (a.sharpe, b.sharpe, a.sharpe - b.sharpe)
    first = comparisons[0].to_dict()
    assert first["sharpe"]["verdict"] == "a_better" and first["ci_method"] == "studentized"
    assert first["sharpe"]["ci_low"] > 0 and first["sharpe"]["p_value"] < 0.05


def test_paired_ci_comes_from_the_same_resamples() -> None:
    models, refs = _two_models()
    pair = {m: models[m] for m in ("strong", "weak")}
    (c,) = paired_bootstrap(pair, refs, "accuracy", n_boot=150, seed=9)
    a = bootstrap(pair["strong"], refs, "accuracy", n_boot=150, seed=9)
    b = bootstrap(pair["weak"], refs, "accuracy", n_boot=150, seed=9)
    np.testing.assert_allclose(
        c.replicates["sharpe"].values, a.replicate_sharpes - b.replicate_sharpes, atol=1e-14
    )
    np.testing.assert_allclose(
        c.replicates["mean"].values, a.replicate_means - b.replicate_means, atol=1e-14
    )
    # By construction, with the same draws: template t of A is paired with template t of B.
    rng = np.random.default_rng(9)
    idx = rng.integers(0, len(refs), size=(150, len(refs)))
    picked = rng.integers(0, 5, size=(150, 5))
    templates = list(pair["strong"])
    for r in (0, 77, 149):
        per_model = []
        for name in ("strong", "weak"):
            scores = [
                corpus.compute(
                    "accuracy",
                    [pair[name][templates[t]][i] for i in idx[r]],
                    [refs[i] for i in idx[r]],
                )
                for t in picked[r]
            ]
            per_model.append(np.array(scores))
        sa = template_statistics(per_model[0], 1.0)["sharpe"]
        sb = template_statistics(per_model[1], 1.0)["sharpe"]
        assert c.replicates["sharpe"].values[r] == pytest.approx(sa[0] - sb[0], abs=1e-12)
        assert c.replicates["sharpe"].values_se[r] == pytest.approx(
            float(template_se(sa[1] - sb[1])), abs=1e-12
        )
    low, high = c.replicates["sharpe"].interval("studentized", 0.95)
    assert (c.sharpe.ci_low, c.sharpe.ci_high) == (low, high)


def test_a_model_against_itself_is_inconclusive() -> None:
    models, refs = _two_models()
    same = {"x": models["mid"], "y": dict(models["mid"])}
    (c,) = paired_bootstrap(same, refs, "accuracy", n_boot=100, seed=0)
    assert c.sharpe.diff == 0.0 and (c.sharpe.ci_low, c.sharpe.ci_high) == (0.0, 0.0)
    assert c.sharpe.verdict == "inconclusive" and c.sharpe.p_value == 1.0
    swapped = paired_bootstrap(
        {"weak": models["weak"], "strong": models["strong"]}, refs, "accuracy", n_boot=100
    )
    assert swapped[0].mean.verdict == "b_better"


def test_paired_bootstrap_rejects_mismatched_input() -> None:
    models, refs = _two_models()
    with pytest.raises(ValueError, match="at least two models"):
        paired_bootstrap({"strong": models["strong"]}, refs, "accuracy")
    other = {"0-0": models["weak"]["0-0"]}
    with pytest.raises(ValueError, match="different templates"):
        paired_bootstrap({"strong": models["strong"], "weak": other}, refs, "accuracy")

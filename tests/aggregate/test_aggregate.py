"""Aggregation across templates: Sharpe score, population std, bootstrap, alpha sweep."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, matthews_corrcoef

from hakari import aggregate as agg
from hakari.aggregate import aggregate, alpha_sweep, bootstrap, sharpe_score
from hakari.errors import HakariInputError
from hakari.scoring import corpus
from hakari.scoring.corpus import mcc as mcc_module

# ----------------------------------------------------------------------------- Sharpe


@pytest.mark.parametrize(
    ("mean", "std", "alpha", "expected"),
    [
        (0.6, 0.2, 0.0, 0.6),  # alpha 0: the plain mean
        (0.6, 0.2, 1.0, 0.6 / 1.2),
        (0.6, 0.2, 2.0, 0.6 / 1.4),
        (0.6, 0.2, 0.5, 0.6 / 1.1),
        (0.45, 0.0, 1.7, 0.45),  # no spread: no penalty
        (-0.2, 0.1, 1.0, -0.2 / 1.1),  # MCC/correlations can be negative
    ],
)
def test_sharpe_score_formula(mean: float, std: float, alpha: float, expected: float) -> None:
    assert sharpe_score(mean, std, alpha) == pytest.approx(expected, abs=1e-15)


def test_sharpe_score_rejects_invalid_inputs() -> None:
    with pytest.raises(ValueError, match="std >= 0"):
        sharpe_score(0.5, -0.1)
    with pytest.raises(ValueError, match="alpha >= 0"):
        sharpe_score(0.5, 0.1, alpha=-1.0)
    with pytest.raises(ValueError, match="finite"):
        sharpe_score(float("nan"), 0.1)


# ----------------------------------------------------------------------------- aggregate


def test_aggregate_population_std_hand_computed() -> None:
    # mean 0.6; deviations -0.1, 0.1, 0.3, -0.3; squares sum to 0.2; /4 -> variance 0.05.
    # (the sample std would be sqrt(0.2 / 3) = 0.258)
    stats = aggregate({"0-0": 0.5, "0-1": 0.7, "1-0": 0.9, "1-1": 0.3}, alpha=1.0)
    assert stats.mean == pytest.approx(0.6)
    assert stats.std == pytest.approx(math.sqrt(0.05))
    assert stats.std_kind == "population"
    assert stats.sharpe == pytest.approx(0.6 / (math.sqrt(0.05) + 1))
    assert (stats.min, stats.max, stats.n_templates) == (0.3, 0.9, 4)
    assert stats.max_minus_min == pytest.approx(0.6)
    assert stats.median == pytest.approx(0.6)
    # linear quantiles of 0.3, 0.5, 0.7, 0.9: positions 0.3 and 2.7
    assert stats.q10 == pytest.approx(0.36)
    assert stats.q90 == pytest.approx(0.84)
    assert stats.ci_low is None and stats.ci_high is None


def test_aggregate_to_dict_layout() -> None:
    d = aggregate({"a": 0.2, "b": 0.4}, alpha=0.5).to_dict()
    required = {"mean", "std", "min", "max", "sharpe", "alpha", "ci_low", "ci_high"}
    assert required <= set(d)
    assert d["alpha"] == 0.5 and d["std_kind"] == "population" and d["n_templates"] == 2
    assert d["sharpe"] == pytest.approx(0.3 / (0.5 * 0.1 + 1))
    assert d["max_minus_min"] == pytest.approx(0.2)


def test_aggregate_single_template_and_errors() -> None:
    single = aggregate({"0-0": 0.42})
    assert (single.mean, single.std, single.sharpe) == (0.42, 0.0, 0.42)
    with pytest.raises(ValueError, match="at least one"):
        aggregate({})
    with pytest.raises(ValueError, match="non-finite"):
        aggregate({"a": 0.5, "b": float("nan")})


# ----------------------------------------------------------------------------- vectorised stats


def _classification_data(
    rng: np.random.Generator, n: int, n_templates: int, labels: list[Any], spread: float = 0.08
) -> tuple[list[list[Any]], list[Any]]:
    """Template t copies the gold with probability 0.5 + spread * t, else answers at random."""
    refs = list(rng.choice(labels, size=n))
    preds = []
    for t in range(n_templates):
        keep = rng.random(n) < 0.5 + spread * t
        noise = rng.choice(labels, size=n)
        preds.append([r if k else x for r, k, x in zip(refs, keep, noise, strict=True)])
    return preds, refs


def _regression_data(
    rng: np.random.Generator, n: int, n_templates: int
) -> tuple[list[list[float]], list[float]]:
    refs = np.round(rng.uniform(0, 5, size=n), 1)  # ties among the references
    preds = [np.round(refs + rng.normal(0, 0.5 + t, size=n)) for t in range(n_templates)]
    preds.append(np.full(n, 2.0))  # a constant template (all fallbacks): correlation 0
    return [list(p) for p in preds], list(refs)


def _loop(statistic: Any, preds: list[list[Any]], refs: list[Any], idx: np.ndarray) -> np.ndarray:
    out = np.empty((len(idx), len(preds)))
    for b, row in enumerate(idx):
        ref_b = [refs[i] for i in row]
        for t, p in enumerate(preds):
            pred_b = [p[i] for i in row]
            if len(set(pred_b)) == 1 or len(set(ref_b)) == 1:
                out[b, t] = 0.0  # the project's convention for undefined correlations
            else:
                out[b, t] = statistic(ref_b, pred_b)
    return out


def test_vectorised_accuracy_and_mcc_equal_sklearn() -> None:
    rng = np.random.default_rng(7)
    preds, refs = _classification_data(rng, 150, 4, ["entailment", "neutral", "contradiction"])
    preds[0][3] = None  # an unparsed answer is a wrong answer and a class of its own
    idx = rng.integers(0, 150, size=(25, 150))
    clean = [["<none>" if x is None else x for x in p] for p in preds]
    acc = agg.resampled_template_scores("accuracy", preds, refs, idx)
    np.testing.assert_allclose(acc, _loop(accuracy_score, clean, refs, idx), atol=1e-12)
    mcc = agg.resampled_template_scores("mcc", preds, refs, idx)
    np.testing.assert_allclose(mcc, _loop(matthews_corrcoef, clean, refs, idx), atol=1e-12)


def test_vectorised_mcc_bincount_path_equals_sklearn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcc_module, "ONEHOT_MAX_CLASSES", 0)  # force the many-classes path
    rng = np.random.default_rng(8)
    preds, refs = _classification_data(rng, 120, 3, [0, 1])
    preds.append([1] * 120)  # constant predictions: MCC 0
    idx = rng.integers(0, 120, size=(20, 120))
    mcc = agg.resampled_template_scores("mcc", preds, refs, idx)
    np.testing.assert_allclose(mcc, _loop(matthews_corrcoef, preds, refs, idx), atol=1e-12)
    assert np.all(mcc[:, -1] == 0.0)


def test_vectorised_pearson_and_spearman_equal_scipy() -> None:
    rng = np.random.default_rng(9)
    preds, refs = _regression_data(rng, 200, 3)
    idx = rng.integers(0, 200, size=(25, 200))
    pearson = agg.resampled_template_scores("pearson", preds, refs, idx)
    expected_p = _loop(lambda r, p: pearsonr(p, r)[0], preds, refs, idx)
    np.testing.assert_allclose(pearson, expected_p, atol=1e-10)
    spearman = agg.resampled_template_scores("spearman", preds, refs, idx)
    expected_s = _loop(lambda r, p: spearmanr(p, r)[0], preds, refs, idx)
    np.testing.assert_allclose(spearman, expected_s, atol=1e-10)
    assert np.all(spearman[:, -1] == 0.0) and np.all(pearson[:, -1] == 0.0)


def test_vectorised_pearson_survives_large_offsets() -> None:
    # Moment sums of uncentred data would cancel catastrophically here.
    rng = np.random.default_rng(10)
    refs = list(1e6 + rng.normal(0, 1e-3, size=100))
    preds = [list(np.asarray(refs) + rng.normal(0, 1e-3, size=100))]
    idx = rng.integers(0, 100, size=(5, 100))
    got = agg.resampled_template_scores("pearson", preds, refs, idx)
    expected = _loop(lambda r, p: pearsonr(p, r)[0], preds, refs, idx)
    np.testing.assert_allclose(got, expected, atol=1e-7)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_vectorised_em_f1_equal_per_item_scoring(lang: str) -> None:
    golds = [["Paris", "the city of Paris"], ["東京タワー。"], ["1995"], ["Denver Broncos"]]
    preds = [["Paris", "東京", "1995.", ""], ["city of Paris", "東京タワー", "in 1995", "Broncos"]]
    idx = np.array([[0, 0, 1, 3], [2, 2, 2, 2], [3, 1, 0, 2]])
    for name in ("exact_match", "f1"):
        got = agg.resampled_template_scores(name, preds, golds, idx, lang=lang)
        expected = [
            [
                corpus.compute(name, [p[i] for i in row], [golds[i] for i in row], lang=lang)
                for p in preds
            ]
            for row in idx
        ]
        np.testing.assert_allclose(got, expected, atol=1e-12)


def test_resampled_scores_validate_indices() -> None:
    with pytest.raises(ValueError, match="shape"):
        agg.resampled_template_scores("accuracy", [[1, 0]], [1, 0], np.zeros((2, 3), int))
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        agg.resampled_template_scores("accuracy", [[1, 0]], [1, 0], np.array([[0, 2]]))


# ----------------------------------------------------------------------------- bootstrap


def test_bootstrap_equals_a_naive_implementation() -> None:
    rng = np.random.default_rng(11)
    preds, refs = _classification_data(rng, 60, 3, [0, 1])
    by_template = {f"{t}-0": p for t, p in enumerate(preds)}
    result = bootstrap(by_template, refs, "mcc", alpha=1.0, n_boot=40, seed=5)

    naive = np.random.default_rng(5)
    idx = naive.integers(0, 60, size=(40, 60))
    picked = naive.integers(0, 3, size=(40, 3))
    for b in range(40):
        scores = [
            corpus.compute("mcc", [preds[t][i] for i in idx[b]], [refs[i] for i in idx[b]])
            for t in picked[b]
        ]
        assert result.replicate_means[b] == pytest.approx(np.mean(scores), abs=1e-12)
        assert result.replicate_stds[b] == pytest.approx(np.std(scores), abs=1e-12)
        expected_sharpe = np.mean(scores) / (np.std(scores) + 1)
        assert result.replicate_sharpes[b] == pytest.approx(expected_sharpe, abs=1e-12)


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    rng = np.random.default_rng(12)
    preds, refs = _regression_data(rng, 80, 3)
    by_template = {str(t): p for t, p in enumerate(preds)}
    a = bootstrap(by_template, refs, "spearman", n_boot=200, seed=3)
    b = bootstrap(by_template, refs, "spearman", n_boot=200, seed=3)
    c = bootstrap(by_template, refs, "spearman", n_boot=200, seed=4)
    np.testing.assert_array_equal(a.replicate_sharpes, b.replicate_sharpes)
    assert a.stats.to_dict() == b.stats.to_dict()
    assert not np.array_equal(a.replicate_sharpes, c.replicate_sharpes)


def test_bootstrap_ci_contains_point_estimate() -> None:
    rng = np.random.default_rng(13)
    preds, refs = _classification_data(rng, 500, 6, [0, 1, 2])
    by_template = {f"{t}-0": p for t, p in enumerate(preds)}
    result = bootstrap(by_template, refs, "accuracy", alpha=1.0, n_boot=1000, seed=0)
    stats = result.stats
    expected_points = {t: corpus.compute("accuracy", p, refs) for t, p in by_template.items()}
    assert result.per_template == pytest.approx(expected_points)
    assert stats.mean == pytest.approx(np.mean(list(expected_points.values())))
    assert stats.ci_low is not None and stats.ci_high is not None
    assert stats.ci_low < stats.mean < stats.ci_high
    assert stats.sharpe_ci_low is not None and stats.sharpe_ci_high is not None
    assert stats.sharpe_ci_low < stats.sharpe < stats.sharpe_ci_high
    assert result.mean_ci == (stats.ci_low, stats.ci_high)
    d = result.stats.to_dict()
    assert d["ci_low"] == stats.ci_low and d["n_boot"] == 1000 and d["seed"] == 0


def test_bootstrap_single_template_matches_binomial_interval() -> None:
    # One template: only instances are resampled, so the 95% CI of an accuracy p on n
    # items is close to p +- 1.96 sqrt(p (1 - p) / n).
    n = 2000
    refs = [1] * n
    preds = [1] * 1400 + [0] * 600  # p = 0.7
    result = bootstrap({"0-0": preds}, refs, "accuracy", n_boot=2000, seed=1)
    half_width = (result.mean_ci[1] - result.mean_ci[0]) / 2
    assert half_width == pytest.approx(1.96 * math.sqrt(0.7 * 0.3 / n), rel=0.1)
    assert result.stats.std == 0.0 and np.all(result.replicate_stds == 0.0)


def test_bootstrap_ci_shrinks_with_more_instances() -> None:
    # Templates of equal true skill: all the width comes from the instances, ~ 1/sqrt(n).
    def width(n: int) -> float:
        rng = np.random.default_rng(14)
        preds, refs = _classification_data(rng, n, 4, [0, 1], spread=0.0)
        by_template = {str(t): p for t, p in enumerate(preds)}
        ci = bootstrap(by_template, refs, "mcc", n_boot=400, seed=0).mean_ci
        return ci[1] - ci[0]

    small, large = width(100), width(3000)
    assert large < 0.4 * small


def test_bootstrap_rejects_bad_arguments() -> None:
    for n_boot in (0, 2):  # the Python API refuses as the CLI does (issue 27 §2)
        with pytest.raises(HakariInputError, match="n_boot"):
            bootstrap({"a": [1]}, [1], "accuracy", n_boot=n_boot)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap({"a": [1]}, [1], "accuracy", confidence=1.0)
    with pytest.raises(ValueError, match="no templates"):
        bootstrap({}, [1], "accuracy")
    with pytest.raises(ValueError, match="template #0"):
        bootstrap({"a": [1, 0]}, [1], "accuracy")


# ----------------------------------------------------------------------------- alpha sweep


def test_default_alphas_have_no_float_drift() -> None:
    alphas = agg.default_alphas()
    assert len(alphas) == 21
    assert alphas[0] == 0.0 and alphas[3] == 0.3 and alphas[7] == 0.7 and alphas[-1] == 2.0


def test_alpha_sweep_ranking_flips() -> None:
    # "bold": mean 0.8, std 0.2; "steady": mean 0.7, std 0.
    # bold wins while 0.8 / (1 + 0.2 a) > 0.7, i.e. a < 5/7 = 0.714...
    sweep = alpha_sweep({"bold": (0.8, 0.2), "steady": (0.7, 0.0)})
    assert [item.alpha for item in sweep] == agg.default_alphas()
    by_alpha = {item.alpha: item for item in sweep}
    assert by_alpha[0.0].ranking == ["bold", "steady"]
    assert by_alpha[0.7].ranking == ["bold", "steady"]
    assert by_alpha[0.8].ranking == ["steady", "bold"]
    assert by_alpha[2.0].ranking == ["steady", "bold"]
    assert by_alpha[1.0].scores["bold"] == pytest.approx(0.8 / 1.2)
    assert by_alpha[1.0].scores["steady"] == pytest.approx(0.7)


def test_alpha_sweep_ties_are_broken_by_model_name() -> None:
    sweep = alpha_sweep({"zeta": (0.5, 0.1), "alpha-model": (0.5, 0.1), "mid": (0.6, 0.3)}, [0.0])
    assert [point.to_dict() for point in sweep] == [
        {
            "alpha": 0.0,
            "scores": {"zeta": 0.5, "alpha-model": 0.5, "mid": 0.6},
            "ranking": ["mid", "alpha-model", "zeta"],
        }
    ]
    with pytest.raises(ValueError, match="at least one model"):
        alpha_sweep({})


# ----------------------------------------------------------------------------- caveats


def test_negative_mean_is_flagged_and_the_formula_kept() -> None:
    # JSTS Pearson below 0: eq. 1 gives the spikier template set the better Sharpe score.
    steady = aggregate({"a": -0.2, "b": -0.2})
    spiky = aggregate({"a": -0.5, "b": 0.1})
    assert steady.sharpe == -0.2 and spiky.sharpe == pytest.approx(-0.2 / 1.3)
    assert spiky.sharpe > steady.sharpe  # the reward for variance the flag warns about
    assert steady.to_dict()["sharpe_caveat"] == "negative_mean"
    assert spiky.sharpe_caveat == "negative_mean"
    assert aggregate({"a": 0.0, "b": 0.0}).to_dict()["sharpe_caveat"] is None
    assert aggregate({"a": 0.3, "b": -0.1}).sharpe_caveat is None

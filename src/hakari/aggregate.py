"""Aggregation of per-template scores: mean, spread, Sharpe score, bootstrap CIs, alpha sweep.

One aggregate is computed per model × task × decoding × metric from the corpus-level
metric of each instruction template. The spread is the **population** standard deviation
(ddof=0) of the per-template scores; the paper (Sakai et al., §5.2) does not say which it
uses, so every result records `std_kind="population"`.

Sharpe score (paper eq. 1): `mean / (alpha * std + 1)`; alpha 0 gives the plain mean.

Bootstrap: each replicate resamples templates with replacement and, independently,
instances with replacement; the same instance indices are used for every template of the
replicate, because all templates are scored on the same instances. The corpus-level metric
is recomputed per template on the resampled instances, then mean, std and Sharpe over the
resampled templates. Intervals are percentile intervals (`numpy.quantile`, linear
interpolation). The replicate statistics are vectorised over replicates:

* accuracy, EM, F1: a per-item score matrix times the instance multiplicities;
* MCC: confusion-matrix marginals from the multiplicities (sklearn's multiclass formula);
* Pearson: weighted moment sums of data centred on the full-sample means;
* Spearman: Pearson of average ranks, the ranks recomputed within each replicate from the
  multiplicities of each distinct value (ties, including duplicated instances, share
  their average rank).

Degenerate replicates (constant predictions or references) score 0.0, as in
`hakari.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hakari import metrics

STD_KIND = "population"
# Replicates are processed in chunks of about this many (replicate, instance) cells, which
# bounds memory at a few tens of MB whatever the split size.
_CHUNK_CELLS = 1 << 21
# Up to this many classes, MCC marginals come from one matrix product with one-hot
# encodings; above it, from bincount (cost independent of the number of classes).
_ONEHOT_MAX_CLASSES = 32
# Relative tolerance under which a resampled variance counts as zero (constant input).
_VARIANCE_RTOL = 1e-10

# A scorer maps (instance indices (b, n), instance multiplicities (b, n)) to the metric of
# every template under every replicate, shape (b, n_templates).
_Scorer = Callable[[np.ndarray, np.ndarray], np.ndarray]


# --------------------------------------------------------------------------- Sharpe


def sharpe_score(mean: float, std: float, alpha: float = 1.0) -> float:
    """Sharpe score `mean / (alpha * std + 1)` (paper eq. 1)."""
    if not (math.isfinite(mean) and math.isfinite(std) and math.isfinite(alpha)):
        raise ValueError(f"sharpe_score needs finite values, got {mean=}, {std=}, {alpha=}")
    if std < 0 or alpha < 0:
        raise ValueError(f"sharpe_score needs std >= 0 and alpha >= 0, got {std=}, {alpha=}")
    return mean / (alpha * std + 1.0)


def _sharpe_array(mean: np.ndarray, std: np.ndarray, alpha: float) -> np.ndarray:
    return mean / (alpha * std + 1.0)


# --------------------------------------------------------------------------- aggregate


@dataclass(frozen=True)
class AggregateStats:
    """Summary of the per-template scores of one model × task × decoding × metric."""

    mean: float
    std: float
    min: float
    max: float
    sharpe: float
    alpha: float
    n_templates: int
    median: float
    q10: float
    q90: float
    std_kind: str = STD_KIND
    ci_low: float | None = None
    ci_high: float | None = None
    sharpe_ci_low: float | None = None
    sharpe_ci_high: float | None = None

    @property
    def max_minus_min(self) -> float:
        """Best minus worst template (FormatSpread's spread)."""
        return self.max - self.min

    def to_dict(self) -> dict[str, float | int | str | None]:
        """The `aggregate[METRIC]` layout of results.json, plus the extra keys."""
        return {
            "mean": self.mean,
            "std": self.std,
            "min": self.min,
            "max": self.max,
            "sharpe": self.sharpe,
            "alpha": self.alpha,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "std_kind": self.std_kind,
            "n_templates": self.n_templates,
            "sharpe_ci_low": self.sharpe_ci_low,
            "sharpe_ci_high": self.sharpe_ci_high,
            "median": self.median,
            "max_minus_min": self.max_minus_min,
            "q10": self.q10,
            "q90": self.q90,
        }


def aggregate(per_template: Mapping[str, float], *, alpha: float = 1.0) -> AggregateStats:
    """Mean, population std, extremes, quantiles and Sharpe score over templates."""
    if len(per_template) == 0:
        raise ValueError("aggregate needs at least one template score")
    scores = np.asarray(list(per_template.values()), dtype=np.float64)
    if not np.all(np.isfinite(scores)):
        bad = [t for t, s in per_template.items() if not math.isfinite(s)]
        raise ValueError(f"non-finite template scores for {bad}")
    mean = float(scores.mean())
    std = float(scores.std(ddof=0))
    q10, median, q90 = (float(q) for q in np.quantile(scores, [0.1, 0.5, 0.9]))
    return AggregateStats(
        mean=mean,
        std=std,
        min=float(scores.min()),
        max=float(scores.max()),
        sharpe=sharpe_score(mean, std, alpha),
        alpha=alpha,
        n_templates=len(scores),
        median=median,
        q10=q10,
        q90=q90,
    )


# --------------------------------------------------------------------------- vectorised scorers


def _per_item_scorer(item_scores: np.ndarray) -> _Scorer:
    """item_scores: (n_templates, n_instances); the metric is the weighted mean."""
    n = item_scores.shape[1]
    transposed = np.ascontiguousarray(item_scores.T)

    def score(_idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return (counts @ transposed) / n

    return score


def _class_counts(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Per-row histogram of integer codes: (b, n) -> (b, n_classes)."""
    b = codes.shape[0]
    offsets = (np.arange(b, dtype=np.int64) * n_classes)[:, None]
    flat = np.bincount((codes + offsets).ravel(), minlength=b * n_classes)
    return flat.reshape(b, n_classes).astype(np.float64)


def _mcc_scorer(pred_codes: np.ndarray, ref_codes: np.ndarray, n_classes: int) -> _Scorer:
    """pred_codes: (n_templates, n); ref_codes: (n,). sklearn's multiclass MCC formula."""
    n_templates, n = pred_codes.shape
    correct = (pred_codes == ref_codes[None, :]).T.astype(np.float64)  # (n, T)
    use_onehot = n_classes <= _ONEHOT_MAX_CLASSES
    if use_onehot:
        eye = np.eye(n_classes)
        # columns: [pred one-hot per template (T*K) | ref one-hot (K) | correct (T)]
        design = np.hstack(
            [
                eye[pred_codes].transpose(1, 0, 2).reshape(n, n_templates * n_classes),
                eye[ref_codes],
                correct,
            ]
        )

    def score(idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
        b = counts.shape[0]
        if use_onehot:
            sums = counts @ design
            tk = n_templates * n_classes
            pred_k = sums[:, :tk].reshape(b, n_templates, n_classes)
            true_k = sums[:, tk : tk + n_classes]
            trace = sums[:, tk + n_classes :]
        else:
            pred_k = np.stack(
                [_class_counts(codes[idx], n_classes) for codes in pred_codes], axis=1
            )
            true_k = _class_counts(ref_codes[idx], n_classes)
            trace = counts @ correct
        s = float(n)
        cov_tp = trace * s - np.einsum("bk,btk->bt", true_k, pred_k)
        cov_pp = s * s - np.einsum("btk,btk->bt", pred_k, pred_k)
        cov_tt = s * s - np.einsum("bk,bk->b", true_k, true_k)[:, None]
        denom = cov_pp * cov_tt  # integer-valued, so exactly 0 for a single class
        safe = np.where(denom > 0, denom, 1.0)
        return np.where(denom > 0, cov_tp / np.sqrt(safe), 0.0)

    return score


def _pearson_scorer(pred: np.ndarray, ref: np.ndarray) -> _Scorer:
    """pred: (n_templates, n) floats; ref: (n,) floats."""
    n_templates, n = pred.shape
    # Centring on the full-sample means keeps the moment sums free of cancellation.
    x = pred - pred.mean(axis=1, keepdims=True)
    y = ref - ref.mean()
    design = np.hstack([x.T, (x * x).T, (x * y).T, y[:, None], (y * y)[:, None]])

    def score(_idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
        sums = counts @ design
        t = n_templates
        sx, sxx, sxy = sums[:, :t], sums[:, t : 2 * t], sums[:, 2 * t : 3 * t]
        sy, syy = sums[:, 3 * t : 3 * t + 1], sums[:, 3 * t + 1 :]
        var_x = n * sxx - sx * sx
        var_y = n * syy - sy * sy
        constant = (var_x <= _VARIANCE_RTOL * n * sxx) | (var_y <= _VARIANCE_RTOL * n * syy)
        denom = np.where(constant, 1.0, var_x * var_y)
        r = np.where(constant, 0.0, (n * sxy - sx * sy) / np.sqrt(np.abs(denom)))
        return np.clip(r, -1.0, 1.0)

    return score


def _centred_ranks(
    groups: np.ndarray, n_groups: int, idx: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks, minus their mean (n+1)/2, of each distinct value in each replicate.

    groups: (n,) index of each instance's value among the sorted distinct values.
    Returns (rank of every original instance (b, n), multiplicity of every group (b, G)).
    """
    per_group = _class_counts(groups[idx], n_groups)
    below = np.cumsum(per_group, axis=1) - per_group
    rank = below + (per_group + 1.0) / 2.0 - (n + 1.0) / 2.0
    return rank[:, groups], per_group * rank * rank


def _spearman_scorer(pred: np.ndarray, ref: np.ndarray) -> _Scorer:
    """Pearson of ranks recomputed in each replicate; ranks are multiples of 1/2, so the
    sums below are exact and a constant side gives exactly 0 variance."""
    n_templates, n = pred.shape
    pred_groups = [np.unique(row, return_inverse=True) for row in pred]
    ref_values, ref_groups = np.unique(ref, return_inverse=True)

    def score(idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
        ref_rank, ref_sq = _centred_ranks(ref_groups, len(ref_values), idx, n)
        weighted_ref_rank = counts * ref_rank
        ss_ref = ref_sq.sum(axis=1)
        out = np.empty((counts.shape[0], n_templates))
        for t, (values, groups) in enumerate(pred_groups):
            rank, sq = _centred_ranks(groups, len(values), idx, n)
            ss_pred = sq.sum(axis=1)
            cross = np.einsum("bn,bn->b", weighted_ref_rank, rank)
            denom = ss_pred * ss_ref
            safe = np.where(denom > 0, denom, 1.0)
            out[:, t] = np.where(denom > 0, cross / np.sqrt(safe), 0.0)
        return np.clip(out, -1.0, 1.0)

    return score


def _item_matrix(
    metric: str,
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Any],
    options: Mapping[str, Any],
) -> np.ndarray:
    """(n_templates, n_instances) per-item scores of a mean-of-items metric."""
    rows = [metrics.per_item_scores(metric, p, references, **options) for p in predictions]
    return np.vstack([r for r in rows if r is not None])


def _make_scorer(
    metric: str,
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Any],
    options: Mapping[str, Any],
    item_scores: np.ndarray | None = None,
) -> _Scorer:
    if metric in metrics.PER_ITEM_METRICS:
        if item_scores is None:
            item_scores = _item_matrix(metric, predictions, references, options)
        return _per_item_scorer(item_scores)
    if metric == "mcc":
        # One code table shared by all templates.
        flat = [label for p in predictions for label in p]
        flat_codes, ref_codes, n_classes = metrics.encode_labels(flat, references)
        return _mcc_scorer(flat_codes.reshape(len(predictions), -1), ref_codes, n_classes)
    pred = np.vstack([metrics.float_values(metric, p, "predictions") for p in predictions])
    ref = metrics.float_values(metric, references, "references")
    if metric == "pearson":
        return _pearson_scorer(pred, ref)
    if metric == "spearman":
        return _spearman_scorer(pred, ref)
    raise ValueError(f"unknown metric {metric!r}")


def _multiplicities(idx: np.ndarray, n: int) -> np.ndarray:
    """How many times each instance occurs in each replicate: (b, n) indices -> (b, n)."""
    return _class_counts(idx, n)


def _check_inputs(
    metric: str, predictions: Sequence[Sequence[Any]], references: Sequence[Any]
) -> None:
    if metric not in metrics.METRIC_NAMES:
        raise ValueError(f"unknown metric {metric!r}; expected one of {metrics.METRIC_NAMES}")
    if len(predictions) == 0:
        raise ValueError("no templates to resample")
    if len(references) == 0:
        raise ValueError(f"metric {metric!r}: no instances to score (empty input)")
    for k, p in enumerate(predictions):
        if len(p) != len(references):
            raise ValueError(
                f"template #{k}: {len(p)} predictions but {len(references)} references"
            )


def resampled_template_scores(
    metric: str,
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Any],
    indices: np.ndarray,
    **metric_options: Any,
) -> np.ndarray:
    """The metric of every template on every row of instance indices.

    `predictions[t]` are template t's predictions; `indices` is (n_replicates, m) with
    entries in [0, n_instances). Returns (n_replicates, n_templates); entry (b, t) equals
    `metrics.compute(metric, [predictions[t][i] for i in indices[b]],
    [references[i] for i in indices[b]])` when m == n_instances (the bootstrap case).
    """
    _check_inputs(metric, predictions, references)
    idx = np.asarray(indices, dtype=np.int64)
    n = len(references)
    if idx.ndim != 2 or idx.shape[1] != n:
        raise ValueError(f"indices must have shape (n_replicates, {n}), got {idx.shape}")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"indices must lie in [0, {n})")
    scorer = _make_scorer(metric, predictions, references, metric_options)
    return scorer(idx, _multiplicities(idx, n))


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Point estimates with percentile CIs, and the replicate statistics they came from."""

    stats: AggregateStats
    per_template: dict[str, float]
    mean_ci: tuple[float, float]
    std_ci: tuple[float, float]
    sharpe_ci: tuple[float, float]
    n_boot: int
    confidence: float
    seed: int
    replicate_means: np.ndarray
    replicate_stds: np.ndarray
    replicate_sharpes: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """`stats.to_dict()` plus the std CI and the bootstrap settings."""
        out: dict[str, Any] = dict(self.stats.to_dict())
        out.update(
            std_ci_low=self.std_ci[0],
            std_ci_high=self.std_ci[1],
            n_boot=self.n_boot,
            confidence=self.confidence,
            seed=self.seed,
            ci_method="percentile",
        )
        return out


def _percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def _point_scores(
    metric: str,
    template_ids: Sequence[str],
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Any],
    options: Mapping[str, Any],
) -> dict[str, float]:
    return {
        tid: metrics.compute(metric, preds, references, **options)
        for tid, preds in zip(template_ids, predictions, strict=True)
    }


def bootstrap(
    predictions: Mapping[str, Sequence[Any]],
    references: Sequence[Any],
    metric: str,
    *,
    alpha: float = 1.0,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    **metric_options: Any,
) -> BootstrapResult:
    """Percentile CIs for the mean over templates and for the Sharpe score.

    `predictions` maps template id -> predictions on the shared instances. Each replicate
    draws instance indices (shared by all templates) and template indices, both uniformly
    with replacement, from `numpy.random.default_rng(seed)`; the result is deterministic
    for a given seed and inputs.
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    template_ids = list(predictions)
    preds = [predictions[t] for t in template_ids]
    _check_inputs(metric, preds, references)
    item_scores = None
    if metric in metrics.PER_ITEM_METRICS:
        # Score the text once: the point estimate is the mean of the per-item scores.
        item_scores = _item_matrix(metric, preds, references, metric_options)
        per_template = {
            t: float(row.mean()) for t, row in zip(template_ids, item_scores, strict=True)
        }
    else:
        per_template = _point_scores(metric, template_ids, preds, references, metric_options)
    point = aggregate(per_template, alpha=alpha)

    scorer = _make_scorer(metric, preds, references, metric_options, item_scores)
    n, n_templates = len(references), len(template_ids)
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // n)
    means, stds = np.empty(n_boot), np.empty(n_boot)
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        idx = rng.integers(0, n, size=(b, n))
        picked_templates = rng.integers(0, n_templates, size=(b, n_templates))
        scores = scorer(idx, _multiplicities(idx, n))
        resampled = np.take_along_axis(scores, picked_templates, axis=1)
        means[start : start + b] = resampled.mean(axis=1)
        stds[start : start + b] = resampled.std(axis=1, ddof=0)
    sharpes = _sharpe_array(means, stds, alpha)

    mean_ci = _percentile_interval(means, confidence)
    sharpe_ci = _percentile_interval(sharpes, confidence)
    stats = replace(
        point,
        ci_low=mean_ci[0],
        ci_high=mean_ci[1],
        sharpe_ci_low=sharpe_ci[0],
        sharpe_ci_high=sharpe_ci[1],
    )
    return BootstrapResult(
        stats=stats,
        per_template=per_template,
        mean_ci=mean_ci,
        std_ci=_percentile_interval(stds, confidence),
        sharpe_ci=sharpe_ci,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
        replicate_means=means,
        replicate_stds=stds,
        replicate_sharpes=sharpes,
    )


# --------------------------------------------------------------------------- alpha sweep


def default_alphas() -> list[float]:
    """0.0, 0.1, ..., 2.0, rounded to one decimal (paper, Figures 3 and 5)."""
    return [round(0.1 * k, 1) for k in range(21)]


def rank_models(scores: Mapping[str, float]) -> list[str]:
    """Model names, best score first; equal scores are ordered by model name (ascending)."""
    return sorted(scores, key=lambda model: (-scores[model], model))


def alpha_sweep(
    model_stats: Mapping[str, tuple[float, float]], alphas: Sequence[float] | None = None
) -> list[dict[str, Any]]:
    """Sharpe score and ranking of each model for each alpha.

    `model_stats` maps model -> (mean, std) over templates. Returns one item per alpha:
    `{"alpha": a, "scores": {model: sharpe}, "ranking": [model, ...]}` (see `rank_models`).
    """
    if len(model_stats) == 0:
        raise ValueError("alpha_sweep needs at least one model")
    sweep = default_alphas() if alphas is None else [float(a) for a in alphas]
    out: list[dict[str, Any]] = []
    for alpha in sweep:
        scores = {m: sharpe_score(mean, std, alpha) for m, (mean, std) in model_stats.items()}
        out.append({"alpha": alpha, "scores": scores, "ranking": rank_models(scores)})
    return out

"""The design-based estimator of a budgeted run: what the cells run say by the design
alone, with no model of the unseen cells. For metrics that are means of item scores
(accuracy, EM, F1); the fallback of `estimate` where the imputation does not fit
(`fallback`).

The balanced design (`design`) gives every instance k templates drawn at random, so each
instance's mean over its cells run is unbiased for its mean over all templates, and the
**design-weighted mean of the cells run** (those instance means averaged per stratum,
the strata weighted by their shares `w_s` of the instances) is unbiased for the full
grid's mean. It is linear in the cells, `sum_j c_j y_j`; the instance effects cancel
from it (every instance is seen), the template effects too where a stratum holds full
blocks of T instances (every template gets as many of them), so its error is the mean of
the template × instance interactions of the cells run, and its variance over the design

    Var = sum_j c_j^2 sigma2_j - mean_j(sigma2_j) / (T N)

(the second term: the cells not run belong to the target too; with k of T templates per
instance this is the finite-grid factor 1 - k/T). Each cell's interaction variance
`sigma2_j` is HC2, `r_j^2 / (1 - h_jj)`, from the least-squares fit of instance effects
and template (× stratum, in strata of full blocks) effects to the cells run: unbiased
whatever the variance of each 0/1 cell, where the fit's pooled residual variance is not.
The interval is Student's t with Satterthwaite's degrees of freedom for that sum, as a
few cells often carry all of it (a strong model: most instances right under every
template). Measured on the skill-server and external grids, the standard error is the
design's to within 0-7% (docs/results/budget.md); what it leaves out, the template
effects that strata smaller than T leave unbalanced, was under 3% of the variance there.

Each template's score comes from its own cells: the strata's means of every cell run
plus the template's mean deviation from them (per stratum where the stratum holds full
blocks), with the design variance `(1 - n/N) S^2 / n` of that deviation, S^2 pooled over
the templates; re-centred on the design-weighted mean.

The decision a reader must know: **the spread over templates is estimated as the
imputation's is** (empirical-Bayes shrinkage of the templates' deviations, `shrinkage`,
with the template covariates), from estimates that nothing has pooled before, so the
templates are shrunk once. Both variances keep one pseudo-observation at the cells'
whole variance (an upper bound): where every cell run agrees with its template (one
that always answers one label), the unseen ones may not, and an interval must not
collapse to a point.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from hakari.aggregate.budget.covariates import covariate_design
from hakari.aggregate.budget.draws import ImputedScores, label_item_table, replicate_chunks
from hakari.aggregate.budget.grid import AnswerGrid
from hakari.aggregate.budget.shrinkage import fit_shrinkage
from hakari.scoring import corpus


@dataclass(frozen=True, eq=False)
class DesignMean:
    """The design-based estimates of one metric from the cells run."""

    mean: float  # mean over templates of `per_template`
    se: float  # the design-based standard error of `mean` (full-grid target)
    df: float  # its degrees of freedom (Satterthwaite)
    per_template: np.ndarray  # (T,) each template's estimate from its own cells
    variance: np.ndarray  # (T,) their design variances (the residual variance pooled)

    def interval(self, confidence: float) -> tuple[float, float]:
        half = float(stats.t.ppf(0.5 + confidence / 2.0, self.df)) * self.se
        return self.mean - half, self.mean + half


def design_mean(values: np.ndarray, strata: np.ndarray) -> DesignMean:
    """The design-based estimates from the item scores `values` (T, N) of the cells run
    (NaN where not run) and the instances' strata (N,); see the module docstring."""
    observed = ~np.isnan(values)
    n_templates, n = values.shape
    strata = np.asarray(strata, dtype=np.int64)
    n_strata = int(strata.max()) + 1 if strata.size else 1
    share = np.bincount(strata, minlength=n_strata) / n
    t_idx, i_idx = np.nonzero(observed)
    y = values[t_idx, i_idx]
    s_idx = strata[i_idx]
    cells_in = np.bincount(s_idx, minlength=n_strata)
    overall = float(y.mean()) if y.size else 0.0
    pooled = np.where(
        cells_in > 0,
        np.bincount(s_idx, weights=y, minlength=n_strata) / np.maximum(cells_in, 1),
        overall,  # a stratum with no cell run (a budget under 1x): the overall mean
    )
    groups = _Groups.of(t_idx, s_idx, strata, n_templates)
    residual = y - pooled[s_idx]
    n_g = np.bincount(groups.column, minlength=groups.size).astype(np.float64)
    delta = np.bincount(groups.column, weights=residual, minlength=groups.size) / np.maximum(
        n_g, 1.0
    )
    per_template = float(share @ pooled) + np.bincount(
        groups.template, weights=groups.weight * delta, minlength=n_templates
    )
    # each group's sampling variance, the residual variance pooled over the templates
    # of its kind (a full stratum, or the strata smaller than T)
    within = residual - delta[groups.column]
    kind_of_cell = groups.kind[groups.column]
    n_kinds = int(groups.kind.max()) + 1
    ss = np.bincount(kind_of_cell, weights=within**2, minlength=n_kinds)
    dof = np.bincount(groups.kind, weights=np.maximum(n_g - 1.0, 0.0), minlength=n_kinds)
    # one pseudo-residual at the kind's whole variance (template effects included, an
    # upper bound): where every cell run agrees with its template's, the unseen ones
    # may still not, and an interval must not collapse to a point
    cells_of_kind = np.bincount(kind_of_cell, minlength=n_kinds).astype(np.float64)
    spread = np.bincount(kind_of_cell, weights=residual**2, minlength=n_kinds)
    upper = spread / np.maximum(cells_of_kind - 1.0, 1.0)
    s2 = (ss + upper) / (dof + 1.0)
    fraction = n_g / np.maximum(groups.instances, 1.0)
    group_var = groups.weight**2 * s2[groups.kind] * (1.0 - fraction) / np.maximum(n_g, 1.0)
    variance = np.bincount(groups.template, weights=group_var, minlength=n_templates)
    mean, se, df = _weighted_mean(i_idx, y, strata, share, groups)
    return DesignMean(mean, se, df, per_template - per_template.mean() + mean, variance)


@dataclass(frozen=True, eq=False)
class _Groups:
    """The template effects the design lets one estimate: one per template and stratum
    where the stratum holds at least one full block of T instances (the design gives
    every template the same number of them, to one, at every level), one per template
    over the strata smaller than that."""

    column: np.ndarray  # (n,) each cell's group
    template: np.ndarray  # (G,) the group's template
    weight: np.ndarray  # (G,) the share of the instances its strata hold
    instances: np.ndarray  # (G,) the instances of its strata
    kind: np.ndarray  # (G,) which residual variance it shares: a full stratum, or 0

    @property
    def size(self) -> int:
        return int(self.template.size)

    @classmethod
    def of(
        cls, t_idx: np.ndarray, s_idx: np.ndarray, strata: np.ndarray, n_templates: int
    ) -> _Groups:
        n_strata = int(strata.max()) + 1 if strata.size else 1
        per_stratum = np.bincount(strata, minlength=n_strata).astype(np.float64)
        full = per_stratum >= n_templates
        pairs = np.arange(n_templates * n_strata)
        pair_t, pair_s = pairs // n_strata, pairs % n_strata
        raw = np.where(full[pair_s], pairs, n_templates * n_strata + pair_t)
        _, group_of_pair = np.unique(raw, return_inverse=True)
        size = int(group_of_pair.max()) + 1
        template = np.zeros(size, dtype=np.int64)
        template[group_of_pair] = pair_t
        weight = np.zeros(size)
        np.add.at(weight, group_of_pair, (per_stratum / per_stratum.sum())[pair_s])
        instances = np.zeros(size)
        np.add.at(instances, group_of_pair, per_stratum[pair_s])
        kind = np.zeros(size, dtype=np.int64)
        kind[group_of_pair] = np.where(full[pair_s], 1 + pair_s, 0)
        _, kind = np.unique(kind, return_inverse=True)
        column = group_of_pair[t_idx * n_strata + s_idx]
        return cls(column, template, weight, instances, kind)


def _weighted_mean(
    i_idx: np.ndarray,
    y: np.ndarray,
    strata: np.ndarray,
    share: np.ndarray,
    groups: _Groups,
) -> tuple[float, float, float]:
    """The design-weighted mean of the cells run, its design-based standard error and
    degrees of freedom. The point estimate is the plain one: each instance's mean over its
    cells, averaged per stratum, the strata weighted by their shares (every cell of a
    stratum weighs the same, which on templates that barely differ has the least
    variance: the mean over templates of each template's own mean, version 4's, was 3-7%
    further from the full grid on the skill-server grids, docs/results/budget.md).
    Linear in the cells, `sum_j c_j y_j`; its variance over the design is
    `sum_j c_j^2 sigma2_j - mean(sigma2) / (T N)` (the last term: the cells not run belong
    to the target too), each cell's interaction variance sigma2_j by HC2
    (`_AdditiveFit`), plus the square of what the template effects left in it: where
    every template ran a cell in a stratum, the design's last, partial block gives some
    templates one cell more, and the plain mean minus the mean over templates of their
    means there (which cancels them) is that part, estimated; added to the variance so
    that templates that always answer one label, whose differences the plain mean
    carries, keep an interval that holds the full grid's mean. What is left out: the
    template effects that unequal counts leave in a stratum where some template ran no
    cell (strata smaller than T at small budgets), under 3% of the variance on the
    skill-server grids, all of whose strata are such (docs/results/budget.md)."""
    n = strata.size
    n_strata = share.size
    n_templates = int(groups.template.max()) + 1
    s_idx = strata[i_idx]
    counts = np.bincount(i_idx, minlength=n).astype(np.float64)
    reached = np.bincount(strata, weights=counts > 0, minlength=n_strata)
    coef = share[s_idx] / np.maximum(reached[s_idx], 1.0) / counts[i_idx]
    t_idx = groups.template[groups.column]
    cells_ts = np.zeros((n_templates, n_strata))
    np.add.at(cells_ts, (t_idx, s_idx), 1.0)
    every = np.all(cells_ts > 0, axis=0)  # (S,) every template ran a cell in it
    per_template = share[s_idx] / n_templates / np.maximum(cells_ts[t_idx, s_idx], 1.0)
    imbalance = float(np.where(every[s_idx], coef - per_template, 0.0) @ y)
    fit = _AdditiveFit.of(i_idx, y, strata, groups)
    sigma2 = fit.interaction_variances()
    variance = float(coef**2 @ sigma2 - sigma2.mean() / (n_templates * n)) + imbalance**2
    pieces = coef**2 * sigma2
    squares = float(pieces @ pieces)
    df = float(pieces.sum()) ** 2 / squares if squares > 0 else fit.df
    df = float(np.clip(df, 1.0, max(fit.df, 1.0)))
    return float(coef @ y), float(np.sqrt(max(variance, 0.0))), df


@dataclass(frozen=True, eq=False)
class _AdditiveFit:
    """The least-squares fit of instance effects and the template effects of `_Groups`
    to the cells run, the instance effects absorbed by demeaning within each instance."""

    residual: np.ndarray  # (n,) of the cells
    strata_of_cell: np.ndarray  # (n,)
    y: np.ndarray  # (n,) the cells
    leverage: np.ndarray  # (n,)
    df: float

    @classmethod
    def of(
        cls, i_idx: np.ndarray, y: np.ndarray, strata: np.ndarray, groups: _Groups
    ) -> _AdditiveFit:
        n = strata.size
        s_idx = strata[i_idx]
        column = groups.column
        counts = np.bincount(i_idx, minlength=n).astype(np.float64)
        indicators = np.zeros((y.size, groups.size))
        indicators[np.arange(y.size), column] = 1.0
        sums = np.zeros((n, indicators.shape[1]))
        np.add.at(sums, i_idx, indicators)
        design = indicators - (sums / np.maximum(counts, 1.0)[:, None])[i_idx]
        gram_inv = np.linalg.pinv(design.T @ design)
        i_mean = np.bincount(i_idx, weights=y, minlength=n) / np.maximum(counts, 1.0)
        y_within = y - i_mean[i_idx]
        residual = y_within - design @ (gram_inv @ (design.T @ y_within))
        leverage = 1.0 / counts[i_idx] + np.einsum("jp,pq,jq->j", design, gram_inv, design)
        rank = int(np.linalg.matrix_rank(design)) if design.size else 0
        df = float(np.sum(np.maximum(counts - 1, 0)) - rank)
        return cls(residual, s_idx, y, leverage, df)

    def interaction_variances(self) -> np.ndarray:
        """Each cell's interaction variance, HC2 (`r^2 / (1 - h)`, unbiased whatever the
        variance of each cell, where the fit's residual variance is not); cells without a
        residual of their own (their instance seen once, or fitted exactly) get their
        stratum's mean, and with no instance seen twice every cell the variance of its
        stratum's cells (an upper bound: the instance effects included)."""
        s_idx = self.strata_of_cell
        n_strata = int(s_idx.max()) + 1 if s_idx.size else 1
        own = self.leverage < 1.0 - 1e-9
        if not np.any(own):
            cells = np.bincount(s_idx, minlength=n_strata)
            mean = np.bincount(s_idx, weights=self.y, minlength=n_strata) / np.maximum(cells, 1)
            scale = self.y.size / max(self.y.size - n_strata, 1)
            return (self.y - mean[s_idx]) ** 2 * scale
        hc2 = np.where(own, self.residual**2 / np.maximum(1.0 - self.leverage, 1e-9), 0.0)
        informative = np.bincount(s_idx, weights=own, minlength=n_strata)
        # one pseudo-cell per stratum at the variance of its cells (an upper bound: the
        # instance and template effects included), so that a stratum whose cells run all
        # fit the effects exactly (templates that always answer one label) keeps some
        # uncertainty about the cells not run
        cells = np.bincount(s_idx, minlength=n_strata).astype(np.float64)
        mean = np.bincount(s_idx, weights=self.y, minlength=n_strata) / np.maximum(cells, 1.0)
        spread = np.bincount(s_idx, weights=(self.y - mean[s_idx]) ** 2, minlength=n_strata)
        upper = spread / np.maximum(cells - 1.0, 1.0)
        total = np.bincount(s_idx, weights=hc2, minlength=n_strata) + upper
        stratum = total / (informative + 1.0)
        weight = informative[s_idx] / (informative[s_idx] + 1.0)
        return np.where(own, weight * hc2 + (1.0 - weight) * upper[s_idx], stratum[s_idx])


def observed_item_scores(
    grid: AnswerGrid, metric: str, options: Mapping[str, Any]
) -> np.ndarray | None:
    """The item scores of the cells run (T, N), NaN where not run; None for a metric that
    is not a mean of item scores or a grid that does not carry them."""
    if not corpus.get(metric).per_item:
        return None
    observed = grid.observed
    if grid.kind == "label":
        table = label_item_table(grid, metric, options)  # (K, N)
        codes = np.where(observed, grid.coded.codes, 0)
        scores = table[codes, np.arange(grid.n_instances)[None, :]]
        return np.where(observed, scores, np.nan)
    if grid.kind == "score" and grid.values is not None and metric in grid.value_names:
        return np.where(observed, grid.values[:, :, grid.value_names.index(metric)], np.nan)
    return None


def design_scores(
    grid: AnswerGrid,
    metric: str,
    *,
    n_draws: int,
    n_boot: int,
    seed: int,
    options: Mapping[str, Any],
    levels: Mapping[str, Mapping[str, str]] | None = None,
) -> tuple[ImputedScores, DesignMean] | None:
    """One metric's template scores as the design-based estimator draws them, in the form
    the imputation gives them (so that every interval and comparison is made the same
    way), and its estimates; None where it does not apply (`observed_item_scores`)."""
    values = observed_item_scores(grid, metric, options)
    if values is None or not np.any(~np.isnan(values)):
        return None
    strata = grid.coded.strata
    estimate = design_mean(values, strata)
    rng = np.random.default_rng([seed, 3])
    quantiles = rng.permutation((np.arange(n_draws) + 0.5) / n_draws)
    means = estimate.mean + estimate.se * stats.t.ppf(quantiles, estimate.df)
    noise = rng.standard_normal((n_draws, grid.n_templates))
    unshrunk = estimate.per_template[None, :] + np.sqrt(estimate.variance)[None, :] * noise
    centre = estimate.per_template - estimate.per_template.mean()
    design = covariate_design(grid.template_ids, levels)
    shrinkage = fit_shrinkage(centre, estimate.variance, n_draws, rng, design)
    draws = shrinkage.apply(unshrunk, np.arange(n_draws))
    shift = (means - draws.mean(axis=1))[:, None]
    every = np.empty((n_boot, grid.n_templates))
    picked = np.empty((n_boot, grid.n_templates), dtype=np.int64)
    chunks = replicate_chunks(grid.n_instances, grid.n_templates, n_boot, seed)
    for start, _, counts, chosen in chunks:
        rows = slice(start, start + counts.shape[0])
        picked[rows] = chosen
        replicates = replicate_estimates(values, strata, counts)
        every[rows] = shrinkage.apply(replicates, np.arange(start, rows.stop) % n_draws)
    resampled = np.take_along_axis(every, picked, axis=1)
    scores = ImputedScores(
        grid.template_ids,
        draws + shift,
        resampled,
        every,
        grid.n_instances,
        seed,
        unshrunk + shift,
        picked,  # the prompt space's intervals read the templates each replicate drew
    )
    return scores, estimate


def replicate_estimates(
    values: np.ndarray, strata: np.ndarray, multiplicities: np.ndarray
) -> np.ndarray:
    """Each template's design-based estimate on bootstrap replicates of the instances
    (b, T): the estimator of `design_mean` with each cell weighted by its instance's
    multiplicity in the replicate (b, N), the strata's shares taken from the replicate."""
    observed = ~np.isnan(values)
    n_templates, n = values.shape
    strata = np.asarray(strata, dtype=np.int64)
    n_strata = int(strata.max()) + 1 if strata.size else 1
    t_idx, i_idx = np.nonzero(observed)
    y = values[t_idx, i_idx]
    s_idx = strata[i_idx]
    groups = _Groups.of(t_idx, s_idx, strata, n_templates)
    weight = multiplicities[:, i_idx].astype(np.float64)  # (b, n cells)
    in_stratum = np.eye(n_strata)[s_idx]  # (n cells, S)
    in_group = np.zeros((y.size, groups.size))
    in_group[np.arange(y.size), groups.column] = 1.0
    stratum_w = weight @ in_stratum
    pooled = (weight * y) @ in_stratum / np.maximum(stratum_w, 1e-300)  # (b, S)
    residual = y[None, :] - pooled[:, s_idx]
    delta = (weight * residual) @ in_group / np.maximum(weight @ in_group, 1e-300)  # (b, G)
    share = multiplicities @ np.eye(n_strata)[strata] / n  # (b, S)
    covers = np.zeros((n_strata, groups.size))  # which strata each group stands for
    pair_group = _Groups.of(
        np.repeat(np.arange(n_templates), n_strata),
        np.tile(np.arange(n_strata), n_templates),
        strata,
        n_templates,
    ).column
    covers[np.tile(np.arange(n_strata), n_templates), pair_group] = 1.0
    group_w = share @ covers  # (b, G)
    of_template = np.zeros((groups.size, n_templates))
    of_template[np.arange(groups.size), groups.template] = 1.0
    return (share * pooled).sum(axis=1, keepdims=True) + (group_w * delta) @ of_template

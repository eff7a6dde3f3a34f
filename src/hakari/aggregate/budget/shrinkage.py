"""Empirical-Bayes shrinkage of the templates' deviations from their mean, on imputed
template scores (see `TemplateShrinkage`); with template covariates (`covariates`) the
deviations are shrunk towards their levels' fitted deviation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hakari.aggregate.budget.covariates import profile_fit, select_columns


@dataclass(frozen=True, eq=False)
class TemplateShrinkage:
    """Empirical-Bayes shrinkage of the templates' deviations from their mean.

    On imputed grids each template's score carries its own imputation error, which
    inflates the spread over templates (the std, hence the Sharpe score). With template
    deviations `dev_t ~ N(0, sigma^2)` (templates as a sample from a population, hakari's
    inferential view; with template covariates `N(x_t' beta, sigma^2)`, see
    `covariates`) and each template's posterior-mean deviation `d_t` observed with the
    variance `v_t` (the templates' imputation variances pooled, `pooled_variance`),
    `dev_t | d, sigma ~ N(B_t d_t, B_t v_t)` with
    `B_t = sigma^2 / (sigma^2 + v_t)`; sigma is drawn from its posterior on a grid (flat
    prior), once per imputation. Draw m becomes
    `mean_m + B_t d_t + sqrt(B_t) (dev_{m,t} - d_t)`, the shrunk deviations
    re-centred so that the mean over templates is kept exactly; the deviations are
    shrunk by what the data say about sigma. With no missing cell `v = 0`, `B = 1` and
    nothing changes.
    """

    centre: np.ndarray  # (T,) d_t
    factor: np.ndarray  # (M, T) B_t of each imputation's sigma draw
    sigma: np.ndarray  # (M,)
    prior: np.ndarray | None = None  # (M, T) the covariates' fitted deviation (None: 0)
    dimensions: tuple[str, ...] = ()  # the covariate dimensions used

    def apply(self, scores: np.ndarray, draw: np.ndarray) -> np.ndarray:
        """Shrink rows of template scores (..., T); row r belongs to imputation draw[r]."""
        mean = scores.mean(axis=-1, keepdims=True)
        b = self.factor[draw]
        prior = 0.0 if self.prior is None else (1.0 - b) * self.prior[draw]
        shrunk = prior + b * self.centre + np.sqrt(b) * (scores - mean - self.centre)
        # deviations from the mean sum to 0: templates shrunk by different amounts must
        # not move the mean over templates (that is the grid's, not the prior's)
        return mean + shrunk - shrunk.mean(axis=-1, keepdims=True)


def template_shrinkage(
    draws: np.ndarray,
    rng: np.random.Generator,
    design: Mapping[str, np.ndarray] | None = None,
    cells: np.ndarray | None = None,
) -> TemplateShrinkage:
    """The shrinkage of `TemplateShrinkage` fitted to the (M, T) imputed template scores;
    with a covariate `design` (`covariates.covariate_design`) the deviations are shrunk
    towards their levels' fitted deviation (dimensions chosen by `select_columns`).
    `cells` (T,), the share of the instances each template was run on: every template
    is shrunk with the pooled variance (`pooled_variance`, for metrics that are means of
    item scores); None: each with its own (corpus metrics such as MCC, whose variance
    depends on how a template spreads its answers over the labels)."""
    deviations = draws - draws.mean(axis=1, keepdims=True)
    centre = deviations.mean(axis=0)
    own = deviations.var(axis=0)
    variance = own if cells is None else pooled_variance(own, cells)
    return fit_shrinkage(centre, variance, draws.shape[0], rng, design)


def fit_shrinkage(
    centre: np.ndarray,
    variance: np.ndarray,
    n_draws: int,
    rng: np.random.Generator,
    design: Mapping[str, np.ndarray] | None = None,
) -> TemplateShrinkage:
    """The shrinkage of the templates' deviations `centre` (T,) observed with the
    variances `variance` (T,), sigma drawn `n_draws` times from its posterior."""
    n_templates = centre.size
    if n_templates < 2 or not np.any(variance > 0):
        return TemplateShrinkage(centre, np.ones((n_draws, n_templates)), np.zeros(n_draws))
    spread = float(np.sqrt(np.mean(centre**2) + np.mean(variance)))
    sigmas = np.linspace(0.0, 3.0 * spread, 301)
    dimensions, columns = select_columns(design or {}, centre, variance, sigmas)
    loglik, fitted = profile_fit(centre, variance, sigmas, columns)
    weights = np.exp(loglik - loglik.max())
    picked = rng.choice(sigmas.size, size=n_draws, p=weights / weights.sum())
    sigma = sigmas[picked]
    s2 = sigma[:, None] ** 2
    factor = np.where(variance[None, :] > 0, s2 / np.maximum(s2 + variance[None, :], 1e-300), 1.0)
    prior = None if columns is None else fitted[picked]
    return TemplateShrinkage(centre, factor, sigma, prior, tuple(dimensions))


def pooled_variance(own: np.ndarray, cells: np.ndarray | None = None) -> np.ndarray:
    """The imputation variance each template is shrunk with: the templates' own
    variances `own` (T,) pooled, in proportion to (1 - f_t)^2 / f_t for a template run on
    a share f_t of the instances (`cells`; the sampling variance of a difference
    estimate from its own cells); 0 where a template's own is 0 (nothing to estimate).

    Why pooled: a template's own imputation variance is computed at its own estimate,
    so on 0/1 metrics a template that hit all of its few cells by chance gets a small
    variance, escapes the shrinkage, and chance reads as spread: the std over templates
    came out +0.015-0.02 too high at 2x on the external MMLU grids (true std
    0.02-0.14), most where the true spread is small, as audits of PromptEval report.
    The balanced design runs every template on about as many cells, so their estimates
    are about equally noisy, which the pooled variance says and the own one does not.
    """
    has = own > 0
    if not np.any(has):
        return np.zeros_like(own)
    if cells is None:
        weight = np.ones_like(own)
    else:
        share = np.clip(np.asarray(cells, dtype=np.float64), 1e-9, 1.0)
        weight = (1.0 - share) ** 2 / share
    weight = np.where(has & (weight > 0), weight, 0.0)
    if not np.any(weight > 0):
        return own.copy()
    level = float(np.sum(own[weight > 0]) / np.sum(weight[weight > 0]))
    return np.where(has, level * weight, 0.0)

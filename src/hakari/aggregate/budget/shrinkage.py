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
    variance `v_t` of its imputations, `dev_t | d, sigma ~ N(B_t d_t, B_t v_t)` with
    `B_t = sigma^2 / (sigma^2 + v_t)`; sigma is drawn from its posterior on a grid (flat
    prior), once per imputation. Draw m becomes
    `mean_m + B_t d_t + sqrt(B_t) (dev_{m,t} - d_t)`, the shrunk deviations re-centred so
    that the mean over templates is kept exactly; the deviations are shrunk by what the
    data say about sigma. With no missing cell `v = 0`,
    `B = 1` and nothing changes.
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
) -> TemplateShrinkage:
    """The shrinkage of `TemplateShrinkage` fitted to the (M, T) imputed template scores;
    with a covariate `design` (`covariates.covariate_design`) the deviations are shrunk
    towards their levels' fitted deviation (dimensions chosen by `select_columns`)."""
    deviations = draws - draws.mean(axis=1, keepdims=True)
    centre = deviations.mean(axis=0)
    variance = deviations.var(axis=0)
    n_draws, n_templates = draws.shape
    if n_templates < 2 or not np.any(variance > 0):
        return TemplateShrinkage(centre, np.ones_like(draws), np.zeros(n_draws))
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

"""Template covariates in the budgeted estimator (`aggregate.budget.covariates`): levels
that explain the templates' scores are used and help; levels that explain nothing, or
none, leave the estimate as it was."""

from __future__ import annotations

import numpy as np
import pytest

from hakari.aggregate.budget.covariates import covariate_design, select_columns
from hakari.aggregate.budget.design import balanced_design
from hakari.aggregate.budget.estimate import estimate
from hakari.aggregate.budget.grid import score_grid
from hakari.aggregate.budget.shrinkage import template_shrinkage

SIGMAS = np.linspace(0.0, 0.5, 101)


def _cue_grid(seed: int, n_templates: int = 24, n: int = 120) -> tuple[np.ndarray, dict]:
    """0/1 correctness where the answer cue (4 levels) decides most of a template's skill."""
    rng = np.random.default_rng(seed)
    cue = np.arange(n_templates) % 4
    noise_dim = rng.integers(0, 3, n_templates)
    skill = np.array([-1.5, -0.3, 0.6, 1.5])[cue] + rng.normal(0, 0.15, n_templates)
    ease = rng.normal(0, 1.0, n)
    p = 1 / (1 + np.exp(-(skill[:, None] + ease[None, :])))
    correct = (rng.random((n_templates, n)) < p).astype(float)
    levels = {
        f"t{t}": {"cue": str(cue[t]), "separator": str(noise_dim[t])} for t in range(n_templates)
    }
    return correct, levels


def test_a_dimension_that_explains_the_deviations_is_chosen_and_noise_is_not() -> None:
    rng = np.random.default_rng(0)
    ids = [f"t{t}" for t in range(30)]
    cue = np.arange(30) % 3
    noise = rng.integers(0, 4, 30)
    levels = {t: {"cue": str(c), "noise": str(k)} for t, c, k in zip(ids, cue, noise, strict=True)}
    design = covariate_design(ids, levels)
    variance = np.full(30, 0.01)
    centre = np.array([-0.2, 0.0, 0.2])[cue] + rng.normal(0, 0.1, 30)
    chosen, columns = select_columns(design, centre - centre.mean(), variance, SIGMAS)
    assert chosen == ["cue"] and columns is not None and columns.shape == (30, 2)
    pure_noise = rng.normal(0, 0.1, 30)
    assert select_columns(design, pure_noise - pure_noise.mean(), variance, SIGMAS)[0] == []


def test_no_levels_or_constant_levels_change_nothing() -> None:
    ids = ["a", "b", "c"]
    assert covariate_design(ids, None) == {}
    assert covariate_design(ids, {t: {"cue": "x"} for t in ids}) == {}
    draws = np.random.default_rng(1).normal(0.5, 0.1, (50, 3))
    plain = template_shrinkage(draws, np.random.default_rng(2))
    same = template_shrinkage(draws, np.random.default_rng(2), {})
    assert plain.prior is None and same.prior is None
    np.testing.assert_array_equal(plain.factor, same.factor)


@pytest.mark.slow
def test_covariates_bring_the_template_scores_closer_on_a_cue_driven_grid() -> None:
    errors = {"without": [], "with": []}
    for seed in range(3):
        correct, levels = _cue_grid(seed)
        ids = list(levels)
        truth = correct.mean(axis=1)
        mask = balanced_design(len(ids), np.zeros(correct.shape[1], int), seed).mask(
            2 * correct.shape[1]
        )
        grid = score_grid(ids, {"exact_match": np.where(mask, correct, np.nan)}, [None] * 120)
        for name, given in (("without", None), ("with", levels)):
            est, _ = estimate(
                grid, ["exact_match"], n_boot=0, seed=seed, n_draws=40, template_levels=given
            )
            per_template = np.array([est["exact_match"].per_template[t] for t in ids])
            errors[name].append(float(np.mean(np.abs(per_template - truth))))
    assert np.mean(errors["with"]) < 0.9 * np.mean(errors["without"]), errors

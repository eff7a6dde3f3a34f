"""The budgeted mean over templates is at its additive floor (docs/results/budget.md,
"where the Sharpe error comes from"): on the balanced design the template and instance
main effects cancel from the mean of the cells run, so that mean's error is the mean of
the run cells' template × instance interactions, and a completion model whose prediction
of an unseen cell is (about) additive cannot do better. The imputed mean must not do
worse: a completion that biased the template totals (an uncalibrated model, a design
that left some instances unseen) would put the mean above this floor, and with it the
Sharpe score, whose error at 2x is mostly the mean's."""

from __future__ import annotations

import numpy as np
import pytest

from hakari.aggregate.budget.design import balanced_design
from hakari.aggregate.budget.estimate import estimate
from hakari.aggregate.budget.grid import score_grid

N_TEMPLATES, N_INSTANCES = 40, 100


def _grid(seed: int) -> np.ndarray:
    """0/1 correctness, Rasch-like (template skill + item ease on the logit), as MMLU."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(1.0, 0.6, N_TEMPLATES)
    ease = rng.normal(0.0, 2.5, N_INSTANCES)
    p = 1.0 / (1.0 + np.exp(-(skill[:, None] + ease[None, :])))
    return (rng.random(p.shape) < p).astype(float)


@pytest.mark.slow
def test_the_budgeted_mean_is_no_worse_than_the_mean_of_the_cells_run() -> None:
    imputed, run = [], []
    ids = [f"t{t}" for t in range(N_TEMPLATES)]
    for seed in range(8):
        correct = _grid(seed)
        mask = balanced_design(N_TEMPLATES, np.zeros(N_INSTANCES), seed).mask(2 * N_INSTANCES)
        grid = score_grid(ids, {"exact_match": np.where(mask, correct, np.nan)}, [None] * 100)
        estimates, _ = estimate(grid, ["exact_match"], n_boot=0, seed=seed, n_draws=40)
        imputed.append(estimates["exact_match"].stats.mean - correct.mean())
        run.append(correct[mask].mean() - correct.mean())
    rms_imputed = float(np.sqrt(np.mean(np.square(imputed))))
    rms_run = float(np.sqrt(np.mean(np.square(run))))
    # the floor itself is ~0.02 here (interaction variance ~0.08 over 200 cells)
    assert rms_imputed <= 1.1 * rms_run, (imputed, run)

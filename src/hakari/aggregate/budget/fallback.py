"""Which estimator makes a metric's numbers: the latent-class imputation where it fits,
else the design-based estimator (`design_based`), which only the design must hold for.

A budgeted estimate must never be further from the truth than the cells it ran. The
imputation earns its keep by predicting a template's unseen cells from the cells other
templates ran on the same instances (on the project's label grids its Sharpe error is half
the design-based floor); where nothing of the kind is there, its model of the unseen
cells only pools the templates, twice (the model's own prior, then the shrinkage of the
spread): on a stub server that answers right with probability 0.9 whatever the item, the
imputed mean was 0.05 under the full grid's and its interval covered it 4 times in 10.

The decision a reader must know: **two checks, each of what the imputation claims,
each against the cells run**, for metrics that are means of item scores (accuracy, EM,
F1; MCC, Pearson and Spearman have no design-based estimator and keep the imputation):

1. *Something carries the imputed cells*: either the instances inform
   (`completion.HeldOut`: a latent model predicts held-out cells from their instances'
   other cells better than the stratified model, template and gold label alone, by at
   least 2 standard errors of the paired per-cell gain), or the templates' own cells do
   (`pooled_share`: the calibration of each template × gold label's unseen cells to
   its own cells run rests on the model's prior for at most a quarter, i.e. about 3
   cells run per template and gold label). Where neither does, the imputed numbers are
   the model's prior: on the skill-server grids (20 templates, 4 labels, 80 cells: one
   cell per template and label) the std came out 0.02-0.05 low and the Sharpe interval
   covered 0.86 of the time. Without an instance run twice (a budget under 2x) nothing
   can be held out and the templates' own cells decide.
2. *The imputed mean agrees with the design*: it lies within 99% of the difference's
   spread (the design-weighted mean's t interval widened by the imputed mean's own
   spread) of the design-weighted mean of the cells run: a gross failure of the model.

Where either fails, every number of the metric (per template, mean, std, Sharpe, both
intervals, the paired differences) comes from the design-based estimator, and
`budget.estimator.metrics[METRIC]` in results.json says which estimator was used and why.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from hakari.aggregate.budget.completion import EVIDENCE_Z, pooled_share
from hakari.aggregate.budget.design_based import DesignMean
from hakari.aggregate.budget.draws import DESIGN_BASED_NAME, ESTIMATOR_NAME, ImputedScores
from hakari.aggregate.budget.records import MetricEstimatorRecord

# The imputed mean must lie within this interval of the design-weighted mean.
MEAN_CHECK_CONFIDENCE = 0.99
# The largest share of the unseen cells' calibration that may rest on the model's prior
# where the instances do not inform (`pooled_share`; measured, docs/results/budget.md).
MAX_POOLED_SHARE = 0.25

__all__ = ["MAX_POOLED_SHARE", "choose", "mean_departs", "pooled_share"]

FITS = "fits"
UNINFORMATIVE = "instances uninformative"
DEPARTS = "mean departs"
NOT_PER_ITEM = "not a mean of item scores"


def choose(
    imputed: ImputedScores,
    design: tuple[ImputedScores, DesignMean] | None,
    evidence: float | None,
    pooled: float,
) -> tuple[ImputedScores, MetricEstimatorRecord]:
    """The scores a metric's numbers are made from, and the record of the choice:
    `evidence` is `completion.HeldOut.evidence`, `pooled` the `pooled_share`."""
    imputed_mean = float(imputed.draws.mean())
    if design is None:
        return imputed, MetricEstimatorRecord(
            used=ESTIMATOR_NAME,
            reason=NOT_PER_ITEM,
            imputed_mean=imputed_mean,
            design_mean=None,
            design_se=None,
            design_df=None,
        )
    scores, estimate = design
    reason = FITS
    informed = evidence is not None and evidence >= EVIDENCE_Z
    if not informed and pooled > MAX_POOLED_SHARE:
        reason = UNINFORMATIVE
    elif mean_departs(imputed.draws.mean(axis=1), estimate):
        reason = DEPARTS
    record = MetricEstimatorRecord(
        used=ESTIMATOR_NAME if reason == FITS else DESIGN_BASED_NAME,
        reason=reason,
        imputed_mean=imputed_mean,
        design_mean=estimate.mean,
        design_se=estimate.se,
        design_df=estimate.df,
    )
    return (imputed if reason == FITS else scores), record


def mean_departs(imputed_means: np.ndarray, estimate: DesignMean) -> bool:
    """Whether the imputed mean (the mean of `imputed_means`, one per imputation) lies
    further from the design-weighted mean than the 99% quantile of their difference: the
    design-weighted mean's t quantile times the root of the sum of its variance and the
    imputed means' (the two are not independent, so this is the wider bound)."""
    centre = float(np.mean(imputed_means))
    if not np.isfinite(centre):
        return True
    spread = float(np.sqrt(estimate.se**2 + np.var(imputed_means)))
    quantile = float(stats.t.ppf(0.5 + MEAN_CHECK_CONFIDENCE / 2.0, estimate.df))
    return abs(centre - estimate.mean) > quantile * spread + 1e-12

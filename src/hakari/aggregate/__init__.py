"""Aggregation of per-template scores: mean, spread, Sharpe score, bootstrap CIs, alpha sweep.

The stages, one module each:

* `summary`: mean, population std, extremes and the Sharpe score (paper eq. 1) of the
  per-template scores — the point estimates;
* `scorers`: the corpus-level metric of every template on many resamples of the
  instances, vectorised over replicates;
* `resampling`: the templates × instances bootstrap (replicates shared by models);
* `intervals`: the inferential target and the interval methods (studentised by default);
* `paired`: paired differences between models on the same replicates;
* `multiple`: K models, every pair corrected together, groups of tied models.

This package computes; what results.json records of it is typed in `hakari.results` (the
schema, which imports none of this code): `AggregateStats`, `TemplateInterval`,
`PairedComparison` / `PairedStatistic`, `ModelGroups`, and the alpha sweep
(`hakari.results.sweep`, a function of the published means and stds), re-exported here.

Also `budget/` (estimates of the full grid from part of it) and `dimensions` (what a prompt
space tells: each dimension's share of the spread over templates).
"""

from __future__ import annotations

from hakari.aggregate.intervals import CI_METHODS, DEFAULT_CI_METHOD
from hakari.aggregate.paired import (
    compare,
    compare_all,
    paired_bootstrap,
)
from hakari.aggregate.resampling import BootstrapResult, bootstrap, bootstrap_bytes
from hakari.aggregate.scorers import resampled_template_scores
from hakari.aggregate.summary import aggregate
from hakari.results.paired import PairedComparison, PairedStatistic
from hakari.results.stats import STD_KIND, AggregateStats, TemplateInterval, sharpe_score
from hakari.results.sweep import AlphaSweepPoint, alpha_sweep, default_alphas, rank_models

__all__ = [
    "CI_METHODS",
    "DEFAULT_CI_METHOD",
    "STD_KIND",
    "AggregateStats",
    "AlphaSweepPoint",
    "BootstrapResult",
    "PairedComparison",
    "PairedStatistic",
    "TemplateInterval",
    "aggregate",
    "alpha_sweep",
    "bootstrap",
    "bootstrap_bytes",
    "compare",
    "compare_all",
    "default_alphas",
    "paired_bootstrap",
    "rank_models",
    "resampled_template_scores",
    "sharpe_score",
]

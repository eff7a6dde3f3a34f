"""Budgeted multi-template evaluation: every number of a full run, estimated from part of
the template × instance grid, with intervals that carry the estimate's uncertainty.

One module per step: `design` (which cells run, in one nested order), `grid` (the observed
cells as codes the completion model reads: answer labels, item-score classes, number
bins), `completion` (the latent-class model and its Gibbs draws: multiple imputations of
the missing cells, calibrated per template × stratum), `estimate` (every metric on every
imputed grid with hakari's scorers, template shrinkage, full-grid and population
intervals, paired differences), `design_based` (the design-weighted mean of the cells
run and its design-based interval) and `fallback` (which of the two makes a metric's
numbers: the imputation where it fits). The runner's side (rounds, the cache, stopping) is
`hakari.runner.plan`, `runner.stopping` and `runner.estimators.imputed`; the measurements are
`benchmarks/bench_budget.py`. The package
imports nothing itself (its records, `records`, are read with every results.json).

Also `covariates` (each template's levels, the shrinkage's prior), `draws` (the imputed
grids scored, and the statistics drawn from them), `shrinkage` (empirical-Bayes shrinkage of
template deviations) and `floor` (which grids are too small to estimate honestly, and what a
run does then).
"""

"""The budget's records in results.json (`budget.design`, `budget.estimator` and its
`metrics`): defined in `hakari.results.budget`, the schema package, and named here for the
estimator's code."""

from __future__ import annotations

from hakari.results.budget import DesignRecord, EstimatorRecord, MetricEstimatorRecord

__all__ = ["DesignRecord", "EstimatorRecord", "MetricEstimatorRecord"]

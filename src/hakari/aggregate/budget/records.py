"""The budget's records in results.json (`budget.design`, `budget.estimator`): defined in
`hakari.results.budget`, the schema package, and named here for the estimator's code."""

from __future__ import annotations

from hakari.results.budget import DesignRecord, EstimatorRecord

__all__ = ["DesignRecord", "EstimatorRecord"]

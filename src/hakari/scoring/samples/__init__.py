"""Per-sample reference metrics and reward models (IFTEval's scorers), as a registry.

Used elsewhere: `score_texts` / `MetricSuite` (score lists of texts), `ScoringConfig`
(model and language options), `metric_infos` (the known names, for help and errors).
"""

from hakari.scoring.samples.api import MetricSuite, ScoredTexts, score_texts
from hakari.scoring.samples.registry import ScoringConfig, metric_infos

__all__ = ["MetricSuite", "ScoredTexts", "ScoringConfig", "metric_infos", "score_texts"]

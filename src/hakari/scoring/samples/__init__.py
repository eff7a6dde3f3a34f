"""Per-sample reference metrics and reward models (IFTEval's scorers), as a registry.

Used elsewhere: `score_texts` / `MetricSuite` (score lists of texts), `ScoringConfig`
(model and language options), `metric_infos` (the known names, for help and errors).
Importing the package registers the built-in families (`lexical`, `neural`, `reward`);
their models and libraries load only when a metric of theirs scores (so importing this
never imports torch).

Also `api.py` (scoring lists of texts: validate, load each model once, score) and
`registry.py` (metric name → the family that computes it).
"""

from hakari.scoring.samples import lexical, neural, reward
from hakari.scoring.samples.api import MetricSuite, ScoredTexts, score_texts
from hakari.scoring.samples.registry import ScoringConfig, metric_infos

__all__ = [
    "MetricSuite",
    "ScoredTexts",
    "ScoringConfig",
    "lexical",
    "metric_infos",
    "neural",
    "reward",
    "score_texts",
]

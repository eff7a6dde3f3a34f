"""The evaluation engine behind `hakari.evaluate` and `hakari run`.

Modules, one per seam: `options.py` (decodings, defaults, `RunOptions`, the config
recorded in results.json), `requests.py` (a rendered prompt → the backend request of each
decoding), `collect.py` (stream one task × decoding through cache and backend, extract,
collect per template, write samples), `scoring.py` (metrics, aggregates with bootstrap
CIs, alpha sweep), `preflight.py` (every check before the first model loads, and the
chance rates from the same pass over the rows), `rundir.py` (the run folder: its own
folder per run, results.json + samples.jsonl published together), `progress.py` (rich
progress bars), `pipeline.py` (`evaluate`: validate everything, then each model in turn,
saving the finished ones when a later one fails).

A custom backend plugs in through `evaluate(..., backend_factory=spec -> Backend)`.
"""

from hakari.runner.options import (
    DECODINGS,
    DEFAULT_DECODINGS,
    DEFAULT_MODEL,
    DEFAULT_TASKS,
    BackendFactory,
    Decoding,
    RunOptions,
    parse_decodings,
)
from hakari.runner.pipeline import evaluate
from hakari.runner.settings import EvalOptions, LoadOptions, OutputOptions, PlanOptions

__all__ = [
    "DECODINGS",
    "DEFAULT_DECODINGS",
    "DEFAULT_MODEL",
    "DEFAULT_TASKS",
    "BackendFactory",
    "Decoding",
    "EvalOptions",
    "LoadOptions",
    "OutputOptions",
    "PlanOptions",
    "RunOptions",
    "evaluate",
    "parse_decodings",
]

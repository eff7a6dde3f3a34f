"""The evaluation engine behind `hakari.evaluate` and `hakari run`.

Modules, in the order a run meets them: `pipeline.py` (`evaluate`: options → every check →
plan → the loop → publish, and the one failure policy: finished models are saved),
`settings.py` (`EvalOptions`: load, plan and output options) and `options.py` (decodings,
defaults, `RunOptions`, the config recorded in results.json), `preflight.py` (every check
before the first model loads, and one pass over the rows that gives each task's instances,
golds and chance rates) with `baselines.py` (the trivial baselines) and `sampling.py`
(`--limit` / `--sample`), `context.py` (what every stage reads, one object), `plan.py`
(the plan: the full grid is one round of every cell, a budget one round of a prefix of
each task's design, a sequential run rounds of growing prefixes; the `Schedule` of
passes), `loop.py` (THE loop: rounds → models → tasks → passes; the one call of the
backend factory and of `run_decodings`), `requests.py` (a rendered prompt → the backend
request of each decoding), `collect.py` (a pass: prompts through cache and backend,
answers extracted into their cells, samples written), `grids.py` (every model's cells
across the rounds, estimated as soon as they are final, published), `stopping.py` (the
stop rule: why a task × decoding stops), `estimators/` (cells → numbers → results.json:
the direct and the imputed estimator and the one finisher, also an importer's entry
point), `families.py` (a task family pooled over its members), `rundir.py` (the run
folder: results.json + samples.jsonl published together), `progress.py` (rich progress
bars).

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

"""The evaluation engine behind `hakari.evaluate` and `hakari run`.

Modules, in the order a run meets them: `pipeline.py` (`evaluate`: options → every check →
plan → the loop → publish, and the one failure policy: finished models are saved),
`settings.py` (`EvalOptions`: load, plan and output options, the one record every stage
reads; its defaults are the only ones) and `options.py` (decodings, defaults, the hooks'
shapes), `preflight.py` (every check before the first model loads, and one pass over the
rows that gives each task's instances, golds and chance rates) with `baselines.py` (the
trivial baselines) and `sampling.py` (`--limit` / `--sample`: which instances), `plan.py`
(the plan: the full grid is one round of every cell, a budget one round of a prefix of
each task's design, a sequential run rounds of growing prefixes; the budget floor; the
`Schedule` of passes), `config.py` (results.json's `config`, made once from the options
and the plan), `context.py` (what every stage reads, one object; the default backend
factory), `loop.py` (THE loop: rounds → models → tasks → passes; the one call of the
backend factory, each model loaded once per run, and of `run_decodings`), `requests.py`
(a rendered prompt → the backend request of each decoding), `collect.py` (a pass: its
cells' prompts through cache and backend, answers extracted into their cells, samples
written), `grids.py` (every model's cells across the rounds, estimated as soon as they
are final, published), `stopping.py` (the stop rule: why a task × decoding stops),
`estimators/` (cells → numbers → results.json: the direct and the imputed estimator and
the one finisher, also an importer's entry point), `families.py` (a task family pooled
over its members), `leaderboard.py` (a family's leaderboard view: jaster's llm-jp-eval
categories, Nejumi's 0-/2-shot average), `rundir.py` (the run folder: results.json +
samples.jsonl published together), `progress.py` (rich progress bars).

A custom backend plugs in through `evaluate(..., backend_factory=spec -> Backend)`. The
package loads the engine when `evaluate` is first asked for, so that the options and
their defaults (`settings`, `options`) import without it (`hakari --help`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hakari.backends.options import LoadOptions
from hakari.runner.options import (
    DECODINGS,
    DEFAULT_DECODINGS,
    DEFAULT_MODEL,
    DEFAULT_TASKS,
    BackendFactory,
    Decoding,
    parse_decodings,
)
from hakari.runner.settings import EvalOptions, OutputOptions, PlanOptions

if TYPE_CHECKING:
    from hakari.runner.pipeline import evaluate

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
    "evaluate",
    "parse_decodings",
]


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from hakari.runner.pipeline import evaluate

        return evaluate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""hakari (秤): fair, variance-aware evaluation of LLMs across instruction templates.

Public API: `evaluate` (a run, as `hakari run` does it) with its `EvalOptions`,
`load_task`, the `Backend`
protocol with its request and result types (the extension point for any model), the
results (`EvalResults`) and the one error users see (`HakariInputError`). Corpus metrics:
`hakari.scoring.corpus.compute`. The engine loads lazily, so `import hakari` stays fast.

Packages, in the order a run meets them: `tasks/` (task files → prompts), `backends/`
(models, the response cache), `runner/` (the engine behind `evaluate`), `scoring/`
(metrics), `aggregate/` (statistics over templates), `results/` (results.json's typed
records), `reports/` (views of finished runs), `cli/` (the `hakari` command); beside them
`rescore/` (re-scoring finished runs), `judges/` (LLM-as-a-judge), `meta/` (meta-evaluation
of metrics), `finetune/` (LoRA adapters), `pfgen/` (pfgen-bench), `interop/` (other tools'
results in and out), `_util/` (shared helpers); `errors.py` (the errors users see).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# first: its sample of the CPUs starts the window over which the `hakari` command reads
# whether other work is running (`cpu.choose_wait_policy`)
import hakari.backends.cpu  # noqa: F401  # isort: skip
from hakari.backends.base import (
    Backend,
    GenerationRequest,
    GenerationResult,
    LoglikRequest,
    LoglikResult,
    Message,
    ModelIdentity,
)
from hakari.errors import HakariInputError

__version__ = "0.1.0"
__all__ = [
    "Backend",
    "EvalOptions",
    "EvalResults",
    "GenerationRequest",
    "GenerationResult",
    "HakariInputError",
    "LoglikRequest",
    "LoglikResult",
    "Message",
    "ModelIdentity",
    "evaluate",
    "load_task",
]

if TYPE_CHECKING:
    from hakari.results import EvalResults
    from hakari.runner import EvalOptions, evaluate
    from hakari.tasks.loader import load_task


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from hakari.runner import evaluate

        return evaluate
    if name == "EvalOptions":
        from hakari.runner import EvalOptions

        return EvalOptions
    if name == "load_task":
        from hakari.tasks.loader import load_task

        return load_task
    if name == "EvalResults":
        from hakari.results import EvalResults

        return EvalResults
    raise AttributeError(f"module 'hakari' has no attribute {name!r}")

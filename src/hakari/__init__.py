"""hakari (秤): fair, variance-aware evaluation of LLMs across instruction templates.

Public API: `evaluate`, `load_task`, `metrics.compute`. Heavy modules load lazily so
that `import hakari` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["EvalResults", "HakariInputError", "evaluate", "load_task"]

if TYPE_CHECKING:
    from hakari.errors import HakariInputError
    from hakari.results import EvalResults
    from hakari.runner import evaluate
    from hakari.tasks.loader import load_task


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from hakari.runner import evaluate

        return evaluate
    if name == "load_task":
        from hakari.tasks.loader import load_task

        return load_task
    if name == "EvalResults":
        from hakari.results import EvalResults

        return EvalResults
    if name == "HakariInputError":
        from hakari.errors import HakariInputError

        return HakariInputError
    raise AttributeError(f"module 'hakari' has no attribute {name!r}")

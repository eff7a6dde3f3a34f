"""The words of a run: its decodings, its defaults, and the shapes of the hooks a caller
may give (the backend factory, progress, status).

Light on purpose (no engine, no numpy): the CLI, the report, the options record
(`settings.py`) and tests name decodings and defaults without importing the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

from hakari._util.checks import did_you_mean
from hakari.backends.base import Backend
from hakari.errors import HakariInputError

Decoding = Literal["greedy", "constrained", "loglik"]
DECODINGS: tuple[Decoding, ...] = ("greedy", "constrained", "loglik")
DEFAULT_MODEL = "smollm2-135m"
DEFAULT_TASKS = ("demo_sentiment_en", "demo_sentiment_ja")
DEFAULT_DECODINGS: tuple[Decoding, ...] = ("greedy", "constrained")


def skip_reason(decoding: Decoding, answer_type: str) -> str | None:
    """Why `decoding` does not apply to a task with this answer type (results.json's
    `skipped`), or None when it does."""
    if decoding == "loglik" and answer_type != "label":
        return "loglik applies to label tasks only"
    return None


CHUNK_ROWS = 64  # instances per streamed chunk (× templates = prompts per chunk)

BackendFactory = Callable[[str], Backend]
"""Model spec → a loaded backend. `evaluate(..., backend_factory=...)` takes one to plug
in any `hakari.backends.base.Backend`; it is called once per model and run, after
validation, and the backend is closed when the run no longer needs it."""

ProgressHook = Callable[[str, int, int, bool], Any]
"""(label, total, advanced, cached): `advanced` more answers of the pass `label` (of
`total`); `cached`: they were read from the response cache (instant, so no measure of
the pace). A caller's `on_progress` may take the first three only
(`progress.caller_hook`)."""
StatusHook = Callable[[str], Any]
"""What the run does now, in words, for the steps without a progress bar (reading a
task's rows, loading a model)."""


def parse_decodings(value: str | Sequence[str]) -> list[Decoding]:
    names = value.split(",") if isinstance(value, str) else list(value)
    out: list[Decoding] = []
    for name in (n.strip() for n in names):
        if name == "all":
            return list(DECODINGS)
        if name not in DECODINGS:
            raise HakariInputError(
                f"unknown decoding {name!r}{did_you_mean(name, (*DECODINGS, 'all'))} "
                "(choose from greedy, constrained, loglik, all)",
                field="--decoding",
            )
        out.append(cast(Decoding, name))
    return out

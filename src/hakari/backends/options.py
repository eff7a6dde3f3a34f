"""`LoadOptions`: how every model of a run is loaded and asked — the one record the CLI
(`hakari run`'s "Loading" and "Servers and vLLM" groups), `evaluate` (`EvalOptions.load`),
the runner and the backend registry (`registry.load_backend`, `check_spec`) share.

Its defaults are the only ones: the CLI's options and `evaluate`'s keywords read them
from here. None of them changes an answer except `dtype` and `prompt_format`, which
reach each backend's identity (the cache key); the runner reads `batch_size`,
`use_cache` and `cache_dir` (the response cache), the registry the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hakari._util import checks
from hakari.backends.serving import ServingOptions
from hakari.results.vocab import PromptFormat


@dataclass(frozen=True)
class LoadOptions:
    """How models are loaded and asked (`--batch-size` ... `--device`, the serving
    options)."""

    batch_size: int | None = None  # distinct prompts per batch; None: the backend's own
    # the response cache and the converted packaged models (None: $HAKARI_CACHE_DIR, else
    # the user cache)
    cache_dir: str | Path | None = None
    use_cache: bool = True  # False: `--no-cache`, every answer asked again
    prompt_format: PromptFormat = "auto"
    dtype: str | None = None  # None: each backend's own (fp32 in-process; vLLM's auto)
    device: str = "auto"
    # torch's CPU threads of in-process models (`--threads`); None: `cpu.default_threads`
    threads: int | None = None
    serving: ServingOptions = field(default_factory=ServingOptions)

    @property
    def cache_path(self) -> Path | None:
        """`cache_dir` as a `Path` (None or "": the default), or one line naming
        `--cache-dir` when it is not a path."""
        return checks.folder(self.cache_dir, "--cache-dir")

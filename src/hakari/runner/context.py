"""What every stage of a run reads, built once by `pipeline.evaluate` after the checks
and passed down as one object: the models, tasks and decodings, the options, the
instance counts and chance rates of each task (`preflight.scan_rows`), the backend
factory, the response cache, the progress hook and where samples go."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hakari.backends import registry
from hakari.backends.base import Backend
from hakari.backends.cache import ResponseCache
from hakari.runner.collect import SampleWriter
from hakari.runner.options import BackendFactory, Decoding, ProgressHook, RunOptions, StatusHook
from hakari.runner.preflight import Baseline
from hakari.runner.settings import TaskDone
from hakari.tasks.loader import Task


def no_progress(label: str, total: int, advanced: int, cached: bool = False) -> None:
    return None


def discard_sample(record: dict[str, Any]) -> None:
    return None


@dataclass
class RunContext:
    models: Sequence[str]
    tasks: Sequence[Task]
    decodings: Sequence[Decoding]
    opts: RunOptions
    baselines: dict[str, Baseline]  # task name -> (instances, chance rate per metric)
    factory: BackendFactory
    cache: ResponseCache | None
    hook: ProgressHook = no_progress
    write_sample: SampleWriter = discard_sample
    on_task_done: TaskDone | None = None
    on_status: StatusHook | None = None
    # model spec -> the identity of its backend (results.json `identity`), as it loads
    identities: dict[str, dict[str, str]] = field(default_factory=dict)
    # model spec -> the engines that served it (results.json `serving`), from a backend
    # that keeps such a record (`serving_record()`: vLLM's data-parallel engines)
    serving: dict[str, dict[str, Any]] = field(default_factory=dict)

    def status(self, text: str) -> None:
        """Say what the run does in a step without a progress bar (loading a model)."""
        if self.on_status is not None:
            self.on_status(text)


def default_factory(opts: RunOptions) -> BackendFactory:
    """The backend factory of a run without one given: the registry, with the run's
    load options."""

    def factory(spec: str) -> Backend:
        return registry.load_backend(
            spec,
            dtype=opts.dtype,
            device=opts.device,
            prompt_format=opts.prompt_format,
            cache_dir=opts.cache_dir,
            serving=opts.serving,
            threads=opts.threads,
        )

    return factory

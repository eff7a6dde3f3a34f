"""What every stage of a run reads, built once by `pipeline.evaluate` after the checks
and passed down as one object (`RunContext`): the models, tasks and options
(`EvalOptions`, read by group), the instance counts and chance rates of each task
(`preflight.scan_rows`), the backend factory, the response cache, the progress hook and
where samples go; and what a pass reads of one model (`ModelContext`: its backend, and
whether its prompts go in as chat)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hakari.backends import registry
from hakari.backends.base import Backend
from hakari.backends.cache import ResponseCache
from hakari.backends.options import LoadOptions
from hakari.runner.baselines import Baseline
from hakari.runner.options import BackendFactory, Decoding, ProgressHook
from hakari.runner.settings import EvalOptions, PlanOptions
from hakari.tasks.loader import Task

SampleWriter = Callable[[dict[str, Any]], None]


def no_progress(label: str, total: int, advanced: int, cached: bool = False) -> None:
    return None


def discard_sample(record: dict[str, Any]) -> None:
    return None


@dataclass
class RunContext:
    models: Sequence[str]
    tasks: Sequence[Task]
    options: EvalOptions  # checked (`preflight.check_options`)
    baselines: dict[str, Baseline]  # task name -> (instances, chance rate per metric)
    factory: BackendFactory
    cache: ResponseCache | None
    hook: ProgressHook = no_progress
    write_sample: SampleWriter = discard_sample
    # model spec -> the identity of its backend (results.json `identity`), as it loads
    identities: dict[str, dict[str, str]] = field(default_factory=dict)
    # model spec -> the engines that served it (results.json `serving`), from a backend
    # that keeps such a record (`serving_record()`: vLLM's data-parallel engines)
    serving: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def load(self) -> LoadOptions:
        return self.options.load

    @property
    def plan(self) -> PlanOptions:
        return self.options.plan

    @property
    def decodings(self) -> tuple[Decoding, ...]:
        return self.options.plan.decoding_list

    def status(self, text: str) -> None:
        """Say what the run does in a step without a progress bar (loading a model)."""
        on_status = self.options.output.on_status
        if on_status is not None:
            on_status(text)


@dataclass(frozen=True)
class ModelContext:
    """What a pass of one model reads (`collect.run_decodings`): the run's context, the
    model's backend and whether its prompts go in as chat (`requests.resolve_chat`)."""

    run: RunContext
    backend: Backend
    use_chat: bool


def default_factory(load: LoadOptions, engines_together: int = 1) -> BackendFactory:
    """The backend factory of a run without one given: the registry, with the run's load
    options. `engines_together`: the vLLM engines the run keeps open at once (a plan of
    several rounds keeps every model's, `loop.Backends`); each then gets its part of the
    device's memory (`registry.shared_memory`)."""

    def factory(spec: str) -> Backend:
        options = load
        if engines_together > 1 and registry.spec_form(spec)[0].name == "vllm":
            options = replace(load, serving=registry.shared_memory(load.serving, engines_together))
        return registry.load_backend(spec, options=options)

    return factory

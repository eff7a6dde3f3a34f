"""What the serving backends (an OpenAI-compatible server, vLLM in-process) share: their
options, and how they keep `GenerationRequest`'s output rules on engines that stop
differently.

Engines stop at the first occurrence of a stop string, even one inside the leading
whitespace of the output; hakari's rule is that stop strings count only after the first
non-whitespace character (`hakari.backends.base.GenerationRequest`). The serving
backends therefore **ask, and re-ask only when needed**: the first request carries every
stop string (cheap: a model that answers "positive\\n" stops after one line); when the
engine stopped with nothing but whitespace, the answer may have been cut inside the
leading whitespace, and the request is sent again with only the stop strings that start
with a non-whitespace character (those can never match inside leading whitespace). The
final text always goes through `apply_output_rules`, which also applies the character
limit, cuts stop strings a server left in its text, and applies `stop_after` (no
engine stops on a regex: the answer is generated to the end of its line, then cut).
Greedy answers are identical to an engine that knew the rules; a sampled first answer
that is re-asked is discarded whole, so the second draw comes from the same distribution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from hakari._util import checks
from hakari.backends.base import (
    REFUSED,
    FinishReason,
    GenerationRequest,
    GenerationResult,
    apply_output_rules,
)
from hakari.errors import HakariInputError


@dataclass(frozen=True)
class ServingOptions:
    """Options of the serving backends (CLI: `--concurrency`, `--request-timeout`, ...).

    None of them changes an answer, so none is part of a cache key, except the vLLM engine
    arguments that can (a quantization, a KV-cache dtype): `hakari.backends.vllm` adds
    those to the identity's revision."""

    concurrency: int = 32  # requests in flight per replica (vLLM batches them)
    request_timeout: float = 120.0  # seconds one HTTP request may take; a stall is retried
    max_attempts: int = 8  # per request, the first try included
    max_retry_time: float = 900.0  # seconds per request, all attempts and waits included
    backoff_base: float = 0.5  # seconds before the first retry (doubles, full jitter)
    backoff_cap: float = 30.0
    replica_failures: int = 5  # consecutive failures that take a replica out
    regex_field: str = "structured_outputs.regex"  # vLLM ≥ 0.12; SGLang: "regex"
    # Completion prompts per /completions request (vLLM, SGLang and OpenAI take a list;
    # transformers serve does not): fewer HTTP round trips for the same answers.
    prompts_per_request: int = 1
    # vLLM in-process
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    distributed_executor_backend: str | None = None  # "ray" for several nodes
    # None: vLLM's own default on a GPU; on a CPU host, what is free (`backends.vllm`)
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    enforce_eager: bool = False  # no compiled graphs: starts in ~1 min on a CPU, not 4-5
    # any other field of vLLM's EngineArgs, as given: "KEY=VALUE" (VALUE read as JSON
    # where it parses, else a string); checked against EngineArgs before any model loads
    engine_args: tuple[str, ...] = ()

    def check(self) -> None:
        """Every option in range (one line naming it), before any server is asked or any
        engine starts."""
        for name, value in {
            "--concurrency": self.concurrency,
            "--max-attempts": self.max_attempts,
            "--prompts-per-request": self.prompts_per_request,
            "--tensor-parallel-size": self.tensor_parallel_size,
            "--data-parallel-size": self.data_parallel_size,
            "replica_failures": self.replica_failures,
        }.items():
            checks.integer(value, name, low=1)
        checks.number(self.request_timeout, "--request-timeout", low=0.0, low_open=True)
        checks.number(self.max_retry_time, "max_retry_time", low=0.0, low_open=True)
        checks.number(self.backoff_base, "backoff_base", low=0.0)
        checks.number(self.backoff_cap, "backoff_cap", low=0.0)
        if self.gpu_memory_utilization is not None:
            checks.probability(
                self.gpu_memory_utilization, "--gpu-memory-utilization", open_low=True
            )
        checks.optional_integer(self.max_model_len, "--max-model-len", low=1)
        if self.distributed_executor_backend is not None:
            checks.choice(
                self.distributed_executor_backend,
                "--distributed-executor-backend",
                ("mp", "ray", "uni", "external_launcher"),
            )
        if not self.regex_field or any(not part for part in self.regex_field.split(".")):
            raise HakariInputError(
                f"{self.regex_field!r} is not a field name (e.g. structured_outputs.regex)",
                field="--regex-field",
            )
        for arg in self.engine_args:
            split_engine_arg(arg)


# The options only an in-process vLLM engine (a `vllm:` spec) reads, by CLI flag.
ENGINE_OPTIONS = {
    "tensor_parallel_size": "--tensor-parallel-size",
    "data_parallel_size": "--data-parallel-size",
    "distributed_executor_backend": "--distributed-executor-backend",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_model_len": "--max-model-len",
    "enforce_eager": "--enforce-eager",
    "engine_args": "--engine-arg",
}


def engine_options_given(opts: ServingOptions) -> list[str]:
    """The flags of `ENGINE_OPTIONS` set away from their defaults."""
    default = ServingOptions()
    return [
        flag
        for name, flag in ENGINE_OPTIONS.items()
        if getattr(opts, name) != getattr(default, name)
    ]


def split_engine_arg(arg: str) -> tuple[str, str]:
    """`--engine-arg KEY=VALUE` → (KEY, VALUE), both stripped, or one line naming it."""
    key, equals, value = (part.strip() for part in arg.partition("="))
    if not equals or not key:
        raise HakariInputError(
            f"{arg!r}: expected KEY=VALUE (a field of vLLM's EngineArgs, e.g. max_num_seqs=64)",
            field="--engine-arg",
        )
    return key, value


def first_stops(request: GenerationRequest) -> tuple[str, ...]:
    """The stop strings of the first ask (none under a regex: the regex ends the answer)."""
    if request.regex is not None:
        return ()
    return tuple(s for s in request.stop if s)


def reask_stops(request: GenerationRequest) -> tuple[str, ...] | None:
    """The stop strings of a re-ask, or None when no re-ask could change the answer
    (no stop string starts with whitespace)."""
    stops = first_stops(request)
    if not any(s[0].isspace() for s in stops):
        return None
    return tuple(s for s in stops if not s[0].isspace())


def needs_reask(
    request: GenerationRequest, text: str, engine_finish: str, stopped_by_eos: bool = False
) -> bool:
    """Whether an engine's answer may have been cut inside its leading whitespace."""
    return (
        engine_finish == "stop"
        and not stopped_by_eos
        and not text.strip()
        and reask_stops(request) is not None
    )


def final_result(
    request: GenerationRequest, text: str, engine_finish: str, n_tokens: int, eos: bool = False
) -> GenerationResult:
    """The result under hakari's rules from an engine's raw text and finish reason
    ("stop", "length", anything else is read as "stop")."""
    if engine_finish == "length":
        text = text.rstrip("\ufffd")  # a character the token limit cut in half
    stops = first_stops(request)  # none under a regex
    after = request.stop_after if request.regex is None else None
    text, rule = apply_output_rules(
        text, stop=stops, max_new_chars=request.max_new_chars, stop_after=after
    )
    finish: FinishReason
    if rule is not None:
        finish = rule
    elif engine_finish == "length":
        finish = "length"
    elif request.regex is not None:
        finish = "regex_done"
    elif eos or not stops:
        finish = "eos"
    else:
        finish = "stop"
    return GenerationResult(text=text, n_tokens=n_tokens, finish_reason=finish)


class EngineAnswer(Protocol):
    """What an engine or a server answered one request, before hakari's rules."""

    @property
    def text(self) -> str | None: ...  # None: a server gave no text (a refusal)
    @property
    def finish(self) -> str: ...
    @property
    def n_tokens(self) -> int: ...
    @property
    def eos(self) -> bool: ...


def to_reask(requests: Sequence[GenerationRequest], answers: Sequence[EngineAnswer]) -> list[int]:
    """The positions of the answers that must be asked again (`needs_reask`)."""
    return [
        i
        for i, (request, answer) in enumerate(zip(requests, answers, strict=True))
        if answer.text is not None and needs_reask(request, answer.text, answer.finish, answer.eos)
    ]


def final_results(
    requests: Sequence[GenerationRequest], answers: Sequence[EngineAnswer]
) -> list[GenerationResult]:
    """`final_result` of each answer; an answer without text is `REFUSED`."""
    return [
        REFUSED if a.text is None else final_result(r, a.text, a.finish, a.n_tokens, a.eos)
        for r, a in zip(requests, answers, strict=True)
    ]

"""The backend interface: what every model backend (transformers, vLLM, an
OpenAI-compatible server, a test double) offers the engine.

Requests are plain frozen dataclasses so that they hash stably into the response cache
(see `hakari.cache`). A backend receives a whole list of requests and is free to batch,
sort and schedule them; it returns results in the order of the requests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol, TypeVar, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to complete.

    `prompt` is the full completion text. When `messages` is set the backend renders
    them with the model's chat template instead (and `prompt` is ignored). Generation
    ends at EOS, after `max_new_tokens`, at the first of `stop` (the stop string is cut
    from the text), or, with a `regex`, as soon as the regex cannot be extended.
    Greedy when temperature == 0.
    """

    prompt: str
    max_new_tokens: int
    messages: tuple[Message, ...] | None = None
    stop: tuple[str, ...] = ("\n",)
    regex: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None

    def settings(self) -> dict[str, object]:
        """Everything but the prompt text: part of the cache key."""
        d = asdict(self)
        d.pop("prompt")
        d.pop("messages")
        return d


@dataclass(frozen=True)
class LoglikRequest:
    """Score each continuation after the context; the backend returns sum log-probs."""

    prompt: str
    continuations: tuple[str, ...]
    messages: tuple[Message, ...] | None = None


@dataclass(frozen=True)
class GenerationResult:
    text: str
    n_tokens: int
    finish_reason: Literal["stop", "length", "eos", "regex_done", "cached"] = "stop"


@dataclass(frozen=True)
class LoglikResult:
    logprobs: tuple[float, ...]
    n_tokens: tuple[int, ...] = field(default=())


@dataclass(frozen=True)
class ModelIdentity:
    """What identifies the model's behaviour, for cache keys and results.json."""

    backend: str
    name: str
    revision: str  # a commit, a file hash, or "" when unknown
    dtype: str = "float32"
    prompt_format: str = "completion"


R = TypeVar("R")
OnBatch = Callable[[list[tuple[int, R]]], None]


@runtime_checkable
class Backend(Protocol):
    identity: ModelIdentity

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        *,
        batch_size: int | None = None,
        on_batch: OnBatch[GenerationResult] | None = None,
    ) -> list[GenerationResult]:
        """Results in request order. After each internal batch the backend calls
        `on_batch([(request_index, result), ...])` so the caller can persist them: a
        crash then loses at most the batch in flight."""
        ...

    def loglik(
        self,
        requests: Sequence[LoglikRequest],
        *,
        batch_size: int | None = None,
        on_batch: OnBatch[LoglikResult] | None = None,
    ) -> list[LoglikResult]: ...

    def render_prompt(self, request: GenerationRequest | LoglikRequest) -> str:
        """The exact text the model sees (chat template applied where asked)."""
        ...

    def close(self) -> None: ...

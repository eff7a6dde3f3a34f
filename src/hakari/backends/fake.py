"""A deterministic backend without a model, for plumbing tests (yours and hakari's).

`--model fake:TEXT` answers every generation with TEXT (under a regex too: an answer that
does not fullmatch is counted as a constraint miss, as for a server that ignores
constraints) and scores log-likelihood continuations by minus their length (the shortest
wins). In Python, `FakeBackend(responder)` answers with `responder(request)` and records
what it generated, like inspect_ai's mockllm; pass it with
`evaluate(..., backend_factory=lambda spec: FakeBackend(...))`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from hakari.backends.base import (
    GenerationRequest,
    GenerationResult,
    InOrder,
    LoglikRequest,
    LoglikResult,
    ModelIdentity,
    OnResults,
)
from hakari.errors import ModelLoadError

PREFIX = "fake:"
REVISION = "1"  # bump when what a fake answers for a spec changes (cache keys)

Responder = Callable[[GenerationRequest], str]
LoglikScorer = Callable[[LoglikRequest, str], float]


def hash_choice(text: str, options: Sequence[str]) -> str:
    """One of `options`, chosen by the sha256 of `text`: varied but reproducible answers."""
    digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    return options[digest % len(options)]


def shortest_wins(request: LoglikRequest, continuation: str) -> float:
    return -float(len(continuation))


class FakeBackend:
    """Answers with `responder(request)`; records every request it really generates."""

    def __init__(
        self,
        responder: Responder,
        *,
        name: str = "fake",
        supports_chat: bool = False,
        loglik_scorer: LoglikScorer | None = None,
    ) -> None:
        self.identity = ModelIdentity(
            backend="fake",
            name=name,
            revision=REVISION,
            prompt_format="chat" if supports_chat else "completion",
        )
        self.supports_chat = supports_chat
        self.responder = responder
        self.loglik_scorer = loglik_scorer or shortest_wins
        self.generated: list[GenerationRequest] = []
        self.scored: list[LoglikRequest] = []
        self.closed = False

    def render_prompt(self, request: GenerationRequest | LoglikRequest) -> str:
        if request.messages:
            return "".join(f"<{m.role}>{m.content}</{m.role}>" for m in request.messages)
        return request.prompt

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[GenerationResult] | None = None,
    ) -> list[GenerationResult]:
        size = batch_size or 8
        collected = InOrder(len(requests), on_results)
        for start in range(0, len(requests), size):
            batch = range(start, min(start + size, len(requests)))
            collected.add([(i, self._answer(requests[i])) for i in batch])
        return collected.results()

    def _answer(self, request: GenerationRequest) -> GenerationResult:
        self.generated.append(request)
        text = self.responder(request)
        return GenerationResult(text=text, n_tokens=max(1, len(text)))

    def loglik(
        self,
        requests: Sequence[LoglikRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[LoglikResult] | None = None,
    ) -> list[LoglikResult]:
        collected = InOrder(len(requests), on_results)
        for i, request in enumerate(requests):
            self.scored.append(request)
            scores = tuple(self.loglik_scorer(request, c) for c in request.continuations)
            collected.add([(i, LoglikResult(scores))])
        return collected.results()

    def close(self) -> None:
        self.closed = True


def parse_spec(spec: str) -> str:
    """`fake:TEXT` → TEXT (the answer to every generation)."""
    if not spec.startswith(PREFIX):
        raise ModelLoadError(f"{spec!r}: expected fake:<answer text>", field="--model")
    return spec[len(PREFIX) :]


def from_spec(spec: str) -> FakeBackend:
    answer = parse_spec(spec)
    return FakeBackend(lambda request: answer, name=spec)

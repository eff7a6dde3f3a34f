"""A deterministic in-process backend for plumbing tests of the engine (no model)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from hakari.backends.base import (
    GenerationRequest,
    GenerationResult,
    LoglikRequest,
    LoglikResult,
    ModelIdentity,
    OnBatch,
)

Responder = Callable[[GenerationRequest], str]


def hash_choice(text: str, options: Sequence[str]) -> str:
    digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    return options[digest % len(options)]


class FakeBackend:
    """Answers with `responder(request)`; records every request it really generates."""

    def __init__(
        self,
        responder: Responder,
        *,
        name: str = "fake",
        supports_chat: bool = False,
        loglik_scorer: Callable[[LoglikRequest, str], float] | None = None,
    ) -> None:
        self.identity = ModelIdentity(backend="fake", name=name, revision="1")
        self.supports_chat = supports_chat
        self.responder = responder
        self.loglik_scorer = loglik_scorer or (lambda req, cont: -float(len(cont)))
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
        on_batch: OnBatch[GenerationResult] | None = None,
    ) -> list[GenerationResult]:
        size = batch_size or 8
        out: list[GenerationResult] = []
        for start in range(0, len(requests), size):
            batch = []
            for i in range(start, min(start + size, len(requests))):
                req = requests[i]
                self.generated.append(req)
                text = self.responder(req)
                res = GenerationResult(text=text, n_tokens=max(1, len(text)))
                batch.append((i, res))
                out.append(res)
            if on_batch is not None:
                on_batch(batch)
        return out

    def loglik(
        self,
        requests: Sequence[LoglikRequest],
        *,
        batch_size: int | None = None,
        on_batch: OnBatch[LoglikResult] | None = None,
    ) -> list[LoglikResult]:
        out = []
        for i, req in enumerate(requests):
            self.scored.append(req)
            res = LoglikResult(tuple(self.loglik_scorer(req, c) for c in req.continuations))
            out.append(res)
            if on_batch is not None:
                on_batch([(i, res)])
        return out

    def close(self) -> None:
        self.closed = True

"""Batch scheduling for the transformers backend.

Generation: requests are grouped by their decoding settings (everything but the prompt,
the seed and `stop_after`), sorted by prompt length within a group, cut into batches of
`batch_size`, and the batches run longest first (an out-of-memory error shows at once).
Prompts are left-padded.

Log-likelihood: `LoglikScheduler` feeds unique model inputs through the scorer (rows
whose input is the same, e.g. single-token continuations of one context, share one
forward pass) and reports each request once all its continuations are scored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import torch

from hakari.backends.base import GenerationRequest, LoglikResult, OnBatch

T = TypeVar("T")


def left_pad(rows: Sequence[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r) :] = 1
    return ids, mask


def generation_group(request: GenerationRequest) -> str:
    """Requests that may share a batch: the same settings but for the seed and
    `stop_after` (rows carry their own; a template's answer regex must not split
    its task's greedy requests into one group per template)."""
    settings = request.settings()
    settings.pop("seed")
    settings.pop("stop_after", None)
    return json.dumps(settings, sort_keys=True)


def schedule(
    requests: Sequence[GenerationRequest],
    prompts: Sequence[list[int]],
    size: int,
    group_of: Callable[[GenerationRequest], str],
) -> Iterator[list[int]]:
    """Batches of request indices: same settings, similar lengths, longest batch first."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault(group_of(r), []).append(i)
    batches: list[list[int]] = []
    for members in groups.values():
        members.sort(key=lambda i: -len(prompts[i]))
        batches.extend(members[s : s + size] for s in range(0, len(members), size))

    def cost(batch: list[int]) -> int:
        return max(len(prompts[i]) + requests[i].max_new_tokens for i in batch)

    batches.sort(key=cost, reverse=True)
    yield from batches


def all_set(results: list[T | None]) -> list[T]:
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        raise RuntimeError(f"no result for requests {missing[:5]}")
    return [r for r in results if r is not None]


@dataclass(frozen=True)
class Pair:
    inputs: tuple[int, ...]  # what the model reads: (context + continuation)[:-1]
    targets: tuple[int, ...]  # the continuation's tokens, predicted at the last positions


class LoglikScheduler:
    """Feeds unique model inputs through the scorer in batches, longest requests first,
    and reports each request once all its continuations are scored."""

    def __init__(
        self,
        pairs: list[list[Pair]],
        size: int,
        score: Callable[[Sequence[tuple[int, ...]], int], torch.Tensor],
        on_batch: OnBatch[LoglikResult] | None,
    ) -> None:
        self.pairs = pairs
        self.size = size
        self.score = score
        self.on_batch = on_batch
        self.values: list[list[float | None]] = [[None] * len(p) for p in pairs]
        self.results: list[LoglikResult | None] = [None] * len(pairs)
        self.pending: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        self.open: list[int] = []

    def run(self) -> list[LoglikResult]:
        order = sorted(
            range(len(self.pairs)),
            key=lambda i: -max((len(p.inputs) for p in self.pairs[i]), default=0),
        )
        for i in order:
            self.open.append(i)
            for j, pair in enumerate(self.pairs[i]):
                if pair.targets:
                    self.pending.setdefault(pair.inputs, []).append((i, j))
                else:
                    self.values[i][j] = 0.0
            while len(self.pending) >= self.size:
                self._flush(self.size)
        while self.pending:
            self._flush(self.size)
        self._report()
        return all_set(self.results)

    def _flush(self, n: int) -> None:
        keys = list(self.pending)[:n]
        keep = max(len(self.pairs[i][j].targets) for k in keys for i, j in self.pending[k])
        logprobs = self.score(keys, keep).cpu()
        for row, key in enumerate(keys):
            for i, j in self.pending.pop(key):
                targets = self.pairs[i][j].targets
                steps = logprobs[row, keep - len(targets) :]
                picked = steps.gather(-1, torch.tensor(targets).unsqueeze(-1))
                self.values[i][j] = float(picked.sum())
        self._report()

    def _report(self) -> None:
        finished: list[tuple[int, LoglikResult]] = []
        for i in self.open:
            if all(v is not None for v in self.values[i]):
                result = LoglikResult(
                    logprobs=tuple(float(v) for v in self.values[i] if v is not None),
                    n_tokens=tuple(len(p.targets) for p in self.pairs[i]),
                )
                self.results[i] = result
                finished.append((i, result))
        if not finished:
            return
        done = {i for i, _ in finished}
        self.open = [i for i in self.open if i not in done]
        if self.on_batch is not None:
            self.on_batch(finished)

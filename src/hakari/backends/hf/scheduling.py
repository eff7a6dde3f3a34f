"""Batch scheduling for the transformers backend.

Generation: requests are sorted by their prompt's tokens and cut into batches of
`batch_size` distinct prompts (requests on one prompt go together and share its
prefill: every row carries its own settings, so no setting splits a batch; prompts that
begin alike share a batch, whose prefill runs their common prefixes once, e.g. one
instance's templates after a chat template's system prompt), and the batches run
longest first (an out-of-memory error shows at once).
Prompts are left-padded.

Log-likelihood: `LoglikScheduler` feeds unique model inputs through the scorer (rows
whose input is the same, e.g. single-token continuations of one context, share one
forward pass) and reports each request once all its continuations are scored. Requests
are ordered by their tokens: the prompts of one template (its instruction and few-shot
examples) land in the same batches, where `prefixes.prefix_tree` finds the token
prefixes they share (the template's, then each prompt's under its multi-token
continuations), each of which the backend runs once.

A flush scores `loglik_rows` distinct inputs where the run does not say
(`--batch-size`): enough that a pass's fixed cost, measured on the device
(`passcost.py`), is a small part of the flush, and at most as many positions' logits as
fit `LOGITS_BYTES`.

Also here: `by_length_runs` (rows cut into passes of similar length) and `left_pad`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from hakari.backends.base import GenerationRequest, InOrder, LoglikResult, OnResults
from hakari.backends.hf.step import PASS_TOKENS


def by_length_runs(lengths: Sequence[int], pass_tokens: int) -> tuple[int, list[list[int]]]:
    """Positions into `lengths` in runs of similar length, each run one left-padded pass
    (its rows padded to its longest), and the tokens they read with `pass_tokens` for
    each pass: the cheapest such cut of the length order (rows 300 and 30 tokens long
    run apart, 300 and 290 together)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    # best[k]: the cheapest runs for the k longest rows; cut[k]: where its last run starts
    best = [0] + [0] * len(order)
    cut = [0] * (len(order) + 1)
    for k in range(1, len(order) + 1):
        best[k], cut[k] = min(
            (best[j] + (k - j) * lengths[order[j]] + pass_tokens, j) for j in range(k)
        )
    runs: list[list[int]] = []
    k = len(order)
    while k:
        runs.append(order[cut[k] : k])
        k = cut[k]
    return best[-1], runs[::-1]


# A log-likelihood flush reads at least this many passes' fixed cost in tokens, so that
# the fixed cost is at most about a ninth of it; within these bounds on its rows and tokens
FLUSH_PASSES = 8
FLUSH_MAX_ROWS = 256
FLUSH_MAX_TOKENS = 32768
# the float32 log-softmax a flush holds: [rows, positions read, vocabulary]
LOGITS_BYTES = 1 << 30


def loglik_rows(lengths: Sequence[int], pass_tokens: int, floor: int) -> int:
    """The distinct model inputs of a log-likelihood flush where the run does not say:
    at their mean length, tokens of at least `FLUSH_PASSES` passes' fixed cost
    (`pass_tokens` each), within `FLUSH_MAX_ROWS` rows and `FLUSH_MAX_TOKENS` tokens;
    never fewer than `floor` (the backend's batch size), and `floor` at the CPU-tuned
    cost (`step.PASS_TOKENS`), where runs were measured, so that they score as before."""
    if not lengths or pass_tokens <= PASS_TOKENS:
        return floor
    mean = max(sum(lengths) / len(lengths), 1.0)
    wanted = math.ceil(FLUSH_PASSES * pass_tokens / mean)
    bound = min(FLUSH_MAX_ROWS, int(FLUSH_MAX_TOKENS / mean))
    return max(floor, min(wanted, bound))


def left_pad(
    rows: Sequence[list[int]], pad: int, min_width: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows left-padded to the longest (at least `min_width`), and their mask."""
    width = max([min_width, *map(len, rows)])
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r) :] = 1
    return ids, mask


def schedule(
    requests: Sequence[GenerationRequest],
    prompts: Sequence[list[int]],
    size: int,
    prefill_cost: Callable[[list[list[int]]], int] | None = None,
) -> Iterator[list[int]]:
    """Batches of request indices, each with at most `size` distinct prompts: requests
    on the same prompt (e.g. a run's greedy and constrained requests) share a batch and
    its prefill; the longest batch runs first.

    Prompts go in token order: those that begin alike go together, as far as they agree
    (after a chat template's shared system prompt, one instance's templates), so a batch
    can prefill their shared prefixes once (`decode.prefill`). Where prompts differ in
    length more than they share (a prompt space's 0- and 3-shot templates side by side),
    that order pads a batch's short prompts to its long ones; with `prefill_cost` (the
    tokens a batch's prefill reads) the batches are cut from the length order instead
    (longest first, ties in token order) where those read fewer tokens in all."""
    by_tokens = sorted(range(len(requests)), key=lambda i: prompts[i])
    batches = _cut(by_tokens, prompts, size)
    if prefill_cost is not None:

        def total(candidate: list[list[int]]) -> int:
            return sum(prefill_cost(_distinct(prompts, batch)) for batch in candidate)

        by_length = _cut(sorted(by_tokens, key=lambda i: -len(prompts[i])), prompts, size)
        if total(by_length) < total(batches):  # ties keep the token order
            batches = by_length

    def cost(batch: list[int]) -> int:
        return max(len(prompts[i]) + requests[i].max_new_tokens for i in batch)

    batches.sort(key=cost, reverse=True)
    yield from batches


def _cut(order: list[int], prompts: Sequence[list[int]], size: int) -> list[list[int]]:
    """`order` cut into batches of at most `size` distinct prompts (a prompt's requests
    are adjacent in every order used)."""
    batches: list[list[int]] = []
    distinct = 0
    for i in order:
        new_prompt = not batches or prompts[batches[-1][-1]] != prompts[i]
        if not batches or (new_prompt and distinct == size):
            batches.append([])
            distinct = 0
        distinct += new_prompt
        batches[-1].append(i)
    return batches


def _distinct(prompts: Sequence[list[int]], batch: list[int]) -> list[list[int]]:
    seen: dict[tuple[int, ...], list[int]] = {}
    for i in batch:
        seen.setdefault(tuple(prompts[i]), prompts[i])
    return list(seen.values())


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
        on_results: OnResults[LoglikResult] | None,
        max_positions: int | None = None,
    ) -> None:
        """`max_positions`: the rows × positions read a flush may hold at most (one row
        is never refused); None: no bound but `size`."""
        self.pairs = pairs
        self.size = size
        self.max_positions = max_positions
        self.score = score
        self.values: list[list[float | None]] = [[None] * len(p) for p in pairs]
        self.results = InOrder(len(pairs), on_results)
        self.pending: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        self.open: list[int] = []

    def run(self) -> list[LoglikResult]:
        def key(i: int) -> tuple[int, ...]:
            return min((p.inputs for p in self.pairs[i]), default=())

        # sorted by their tokens: prompts that share a prefix (a template's instruction
        # and shots) fill the same batches, where `prefix_tree` runs the prefix once
        order = sorted(range(len(self.pairs)), key=key)
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
        return self.results.results()

    def _flush(self, n: int) -> None:
        keys: list[tuple[int, ...]] = []
        keep = 0
        for key in list(self.pending)[:n]:
            wider = max(keep, *(len(self.pairs[i][j].targets) for i, j in self.pending[key]))
            if keys and self.max_positions and (len(keys) + 1) * wider > self.max_positions:
                break
            keys.append(key)
            keep = wider
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
                finished.append((i, result))
        if not finished:
            return
        done = {i for i, _ in finished}
        self.open = [i for i in self.open if i not in done]
        self.results.add(finished)

"""What a forward pass costs on this device and this model, measured when the backend
loads: a fixed part (on a CPU reading the weights, on a GPU launching every layer's
kernels from Python) and a part for each token it reads.

The batch cuts count a pass's fixed part in tokens (`PassCost.pass_tokens`): the tree
of shared prefixes (`tree.py`), the runs of similar length (`scheduling.by_length_runs`),
the prefill's plan (`prefill.py`) and the rows of a log-likelihood flush
(`scheduling.loglik_rows`). A constant tuned on one CPU (64 tokens: SmolLM2-135M on 2
cores) made ~4 questions a pass on a GPU, where the fixed part is the whole cost.

The measurement is a median of `REPEATS` timed passes at batch 1 and one token, then
passes of growing size (rows of `WIDTH` tokens) until one costs at least `GROWTH` times
the one-token pass (or reads `MAX_MEASURED` tokens); on SmolLM2-135M on a CPU that is
a pass of 16 or 32 tokens, 1.5 s in all on 2 cores under a load average of 6 (a third of
that expected quiet, not measured), on a tiny model a few ms. The result is snapped
to a power of two, at least the tuned CPU constant (`MIN_PASS_TOKENS`), so that the
noise of a loaded machine rarely moves a cut; the cuts are a deterministic function of
it.

A model of 1B parameters or more on a CPU is not measured (`HFBackend`): its passes
take seconds and its measurement would end at that floor.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import torch

from hakari.backends.hf.step import PASS_TOKENS, ModelStep

REPEATS = 3
WIDTH = 64  # tokens a row in the measured passes
GROWTH = 2.0  # the measured pass costs at least this many one-token passes
MAX_MEASURED = 4096  # tokens of the largest measured pass
# Never below the constant tuned by timing real runs on a CPU (`step.PASS_TOKENS`): a
# pass measured at batch 1 reads its tokens slower than a batched one, so on a CPU the
# measurement comes out low and noisy (SmolLM2-135M on 2 loaded cores: 16 or 32), and
# counted so the default run's trees ran 5-12% slower. The floor keeps the packaged model
# on a CPU where it was measured fastest, and its cuts the same from load to load; a
# device or model whose pass costs more than that (a GPU, a tiny model) gets its own.
MIN_PASS_TOKENS = PASS_TOKENS
MAX_PASS_TOKENS = 4096
# A pass counted as this many times its fixed part measured at batch 1: a tree's pass
# also copies its parent's keys and values, and runs slower a token than a batched one
# (on the default run's Japanese batches a tree counted at 32 tokens, SmolLM2's measured
# fixed part, ran 5-12% slower than one counted at 64)
PASS_OVERHEAD = 2.0


@dataclass(frozen=True)
class PassCost:
    """A forward pass's fixed part and the cost of each token it reads, in ms."""

    fixed_ms: float
    token_ms: float

    @property
    def pass_tokens(self) -> int:
        """A pass's fixed part in tokens (times `PASS_OVERHEAD`), a power of two between
        `MIN_PASS_TOKENS` and `MAX_PASS_TOKENS`. Nothing measured (a timer too coarse to
        see a pass gives 0 for both parts; a cost that is not a finite number) counts the
        floor, the CPU-tuned constant, not the ceiling; a pass all fixed part (its tokens
        cost nothing measurable) the ceiling."""
        finite = math.isfinite(self.fixed_ms) and math.isfinite(self.token_ms)
        if not finite or self.fixed_ms <= 0:
            return MIN_PASS_TOKENS
        if self.token_ms <= 0:
            return MAX_PASS_TOKENS
        ratio = max(PASS_OVERHEAD * self.fixed_ms / self.token_ms, 1.0)
        return min(max(2 ** round(math.log2(ratio)), MIN_PASS_TOKENS), MAX_PASS_TOKENS)

    def record(self) -> dict[str, float | int]:
        """For results.json (`serving` of the model): the measurement and its use."""
        return {
            "pass_fixed_ms": round(self.fixed_ms, 3),
            "pass_token_ms": round(self.token_ms, 5),
            "pass_tokens": self.pass_tokens,
        }


@torch.inference_mode()
def measure_pass_cost(step: ModelStep, device: torch.device, vocab_size: int) -> PassCost:
    """The model's pass cost on `device` (module docstring)."""

    def timed(tokens: int) -> float:
        width = min(tokens, WIDTH)
        rows = max(tokens // width, 1)
        ids = (torch.arange(rows * width) % vocab_size).view(rows, width).to(device)
        attention = torch.ones(rows, width, dtype=torch.long, device=device)
        positions = torch.arange(width, device=device).expand(rows, width)
        _synchronize(device)
        started = time.perf_counter()
        step.extend(ids, attention, positions, None, keep=1)
        _synchronize(device)
        return (time.perf_counter() - started) * 1000

    timed(1)  # the first pass allocates
    one = statistics.median(timed(1) for _ in range(REPEATS))
    tokens = 16
    first = timed(tokens)
    while first < GROWTH * one and tokens < MAX_MEASURED:
        tokens *= 2
        first = timed(tokens)
    big = statistics.median([first, *(timed(tokens) for _ in range(REPEATS - 1))])
    token_ms = max(big - one, 0.0) / (tokens - 1)
    return PassCost(fixed_ms=max(one - token_ms, 0.0), token_ms=token_ms)


def attention_pair_tokens(hidden_size: object) -> float:
    """A (query, key) pair of attention counted in tokens, from the model's arithmetic:
    a token's layers cost about 12 hidden² multiply-adds (the projections and the MLP),
    a pair 2 hidden (its score and its share of the values), so a pair is 1 / (6 hidden)
    of a token. The measured token cost (rows of `WIDTH` tokens) leaves out attention over
    long rows; where the hidden size is tiny (the tests' random models) that is most of a
    pass. A hidden size that is not a positive whole number (none, or a config's odd
    value): 0, attention not counted."""
    if isinstance(hidden_size, bool) or not isinstance(hidden_size, int) or hidden_size <= 0:
        return 0.0
    return 1 / (6 * hidden_size)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)

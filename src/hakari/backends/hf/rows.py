"""Per-row control of one generation batch: every row carries its own stop strings,
regex constraint, token limit and sampler, so no setting forces a batch to split.

* Stop strings, the character limit and `stop_after` follow `GenerationRequest`'s
  rules (stops only after the first non-whitespace character; no partial UTF-8 character
  at the end), checked on each row's decoded text after every token:
  `generate(stop_strings=...)` made a plain loop 60% slower and knows none of the rules.
* A regex row is masked with its `RegexConstraint` and ends as soon as the regex cannot
  continue. A row that is done leaves the batch (`decode.py`); the batch ends when
  every row is done. Stop strings do not apply to regex rows: the regex defines the end
  of the answer, and cutting a stop string out of a match could break it.
* Sampling (temperature > 0) draws from each row's own `torch.Generator`, seeded with
  the request's `seed`: the draw does not depend on which other requests share the
  batch (the logits themselves differ only at float rounding level between batch
  compositions). Without a seed the generator is seeded at random.

The decoding loop (`decode.py`) calls `constrain_and_sample` on each step's scores of
the live rows and `RowStepper.advance` with the rows' tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch
from transformers import PreTrainedTokenizerBase

from hakari.backends.base import (
    MAX_TOKENS_PER_CHAR,
    FinishReason,
    GenerationResult,
    StopAfter,
    apply_output_rules,
)
from hakari.backends.constrained import RegexConstraint, RegexConstraintFactory, apply_bitmask
from hakari.backends.hf.fasttok import Decoder, direct_batch_decoder, direct_decoder

REPLACEMENT = "\ufffd"


@dataclass
class Sampler:
    temperature: float
    top_p: float
    top_k: int
    seed: int
    _generator: torch.Generator | None = None

    def draw(self, logits: torch.Tensor) -> int:
        """One token from `logits` (1-D, already constrained)."""
        if self._generator is None or self._generator.device != logits.device:
            self._generator = torch.Generator(device=logits.device).manual_seed(self.seed)
        scores = logits / self.temperature
        if 0 < self.top_k < scores.numel():
            kth = torch.topk(scores, self.top_k).values[-1]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        if self.top_p < 1.0:
            ordered, order = torch.sort(scores, descending=True)
            cum = torch.softmax(ordered, dim=-1).cumsum(-1)
            drop = (cum - torch.softmax(ordered, dim=-1)) >= self.top_p  # keeps the first
            scores = scores.scatter(0, order[drop], float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        return int(torch.multinomial(probs, 1, generator=self._generator).item())


@dataclass
class Row:
    prompt: list[int]
    max_new: int
    stop: tuple[str, ...]
    constraint: RegexConstraint | None
    sampler: Sampler | None
    max_chars: int | None = None
    stop_after: StopAfter | None = None
    index: int = 0  # the request it answers, in the backend call's list
    generated: list[int] = field(default_factory=list)
    done: bool = False
    finish: FinishReason = "length"

    @property
    def watches_text(self) -> bool:
        """Whether the decoded text must be looked at after each token."""
        return bool(self.stop) or self.max_chars is not None or self.stop_after is not None

    def output_rules(self, text: str) -> tuple[str, Literal["stop", "length"] | None]:
        return apply_output_rules(
            text, stop=self.stop, max_new_chars=self.max_chars, stop_after=self.stop_after
        )

    def result(self, decode: Decoder) -> GenerationResult:
        """The row's answer; `decode`: ids -> text (`RowStepper.decode`)."""
        ids = self.generated[:-1] if self.finish == "eos" else self.generated
        text, _ = self.output_rules(decode_whole_chars(decode, ids))
        return GenerationResult(text=text, n_tokens=len(self.generated), finish_reason=self.finish)


def decode_whole_chars(decode: Decoder, ids: list[int], text: str | None = None) -> str:
    """The decoded text without a trailing incomplete UTF-8 character: when the last
    tokens hold only the first bytes of a character (a byte-level tokenizer spells a
    Japanese character in up to 3 tokens), they are held back rather than decoded as
    U+FFFD. `text`: `decode(ids)`, where the caller has it already."""
    if text is None:
        text = decode(ids)
    if not text.endswith(REPLACEMENT):
        return text
    for k in range(1, min(MAX_TOKENS_PER_CHAR - 1, len(ids)) + 1):
        shorter = decode(ids[:-k])
        if not shorter.endswith(REPLACEMENT):
            return shorter
    return text


class RowStepper:
    """Records each generated token of a row and decides whether the row ends.

    Stop strings, the character limit and `stop_after` follow `GenerationRequest`'s
    rules exactly (the same `apply_output_rules` decides when a row ends and cuts its final
    text): the row's whole text is decoded after each token, which costs tens of
    microseconds next to a forward pass of milliseconds, and is the only way to know
    where the leading whitespace ends."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, eos: frozenset[int]) -> None:
        self.tokenizer = tokenizer
        self.decode = direct_decoder(tokenizer)  # ids -> text, skipping special tokens
        self.decode_rows = direct_batch_decoder(tokenizer)  # the same, rows in one call
        self.eos = eos

    def advance(self, rows: list[Row], tokens: list[int]) -> None:
        """Each row's token of one step; the rows that watch their text are decoded in
        one call."""
        watching: list[Row] = []
        for row, token in zip(rows, tokens, strict=True):
            row.generated.append(token)
            if token in self.eos:
                row.done, row.finish = True, "eos"
            elif row.constraint is not None and _regex_done(row.constraint, token):
                row.done, row.finish = True, "regex_done"
            elif row.watches_text:
                watching.append(row)
            else:
                self._at_length(row)
        texts = self.decode_rows([row.generated for row in watching]) if watching else []
        for row, text in zip(watching, texts, strict=True):
            # the text `result` will cut: an incomplete last character is held back with
            # the whole token that began it (a space in that token too), so a rule never
            # fires on characters the final text does not hold
            whole = decode_whole_chars(self.decode, row.generated, text)
            _, reason = row.output_rules(whole)
            if reason is not None:
                row.done, row.finish = True, reason
            else:
                self._at_length(row)

    @staticmethod
    def _at_length(row: Row) -> None:
        if len(row.generated) >= row.max_new:
            row.done, row.finish = True, "length"


def _regex_done(constraint: RegexConstraint, token: int) -> bool:
    constraint.advance(token)
    return bool(constraint.is_finished)


def constrain_and_sample(
    rows: list[Row], scores: torch.Tensor, factory: RegexConstraintFactory
) -> torch.Tensor:
    """`scores` ([rows, vocab], one row per live `Row`) with constrained rows masked by
    their regex and sampled rows drawn with their own generator (the drawn token gets the
    only finite score, so the greedy pick takes it)."""
    masked = [i for i, row in enumerate(rows) if row.constraint is not None]
    if masked:
        bitmask = factory.allocate_bitmask(len(masked))
        constraints = [rows[i].constraint for i in masked]
        factory.fill_bitmasks([c for c in constraints if c is not None], bitmask)
        sub = scores[masked]
        apply_bitmask(sub, bitmask)
        scores[masked] = sub
    for i, row in enumerate(rows):
        if row.sampler is not None:
            token = row.sampler.draw(scores[i])
            scores[i].fill_(float("-inf"))
            scores[i, token] = 0.0
    return scores

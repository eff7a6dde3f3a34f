"""Regex-constrained decoding: one interface for every backend that picks tokens itself.

Implemented with llguidance (MIT, no dependencies): regexes compile lazily (a few ms even
for `[^\\n]{1,120}`), tokens are matched as UTF-8 bytes (so byte-fallback tokens of
Japanese text work) and special tokens never match regex text.

EOS semantics, normalised here so that backends need not know the library's:

* `RegexConstraint.allowed_tokens()` / `fill_bitmask()` allow an EOS token exactly when the
  text so far fully matches the regex (`is_accepting`).
* `is_finished` is true as soon as no further token can extend the match (the regex
  cannot continue) or an EOS token was consumed. A backend stops the row right there: it
  never spends a step generating the EOS token that is the only option left.

A regex uses Rust `regex` syntax (https://docs.rs/regex), which for the patterns tasks use
(classes, alternation, repetition, escapes) agrees with Python's `re`; look-around and
back-references are rejected by `validate_regex`. Backends that hand the regex to an
engine of their own (vLLM's `structured_outputs`) only need `validate_regex`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import llguidance
import llguidance.hf
import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from hakari.errors import HakariInputError, ModelLoadError

BITS_PER_WORD = 32


class ConstraintError(RuntimeError):
    """A token was fed to a constraint that does not allow it (a backend bug)."""


@lru_cache(maxsize=4096)
def _grammar(regex: str) -> str:
    return str(llguidance.LLMatcher.grammar_from_regex(regex))


def validate_regex(regex: str) -> str | None:
    """The error text when `regex` cannot be used as a constraint, else None.

    Tokenizer-free: checks the syntax and that the regex compiles.
    """
    message = str(llguidance.LLMatcher.validate_grammar(_grammar(regex)))
    return _error_text(message)


def _error_text(message: str) -> str | None:
    if not message or message.startswith("WARNING"):
        return None
    return message.strip()


class RegexConstraint:
    """The state of one constrained generation: feed it each token the model picks."""

    def __init__(
        self, regex: str, matcher: llguidance.LLMatcher, factory: RegexConstraintFactory
    ) -> None:
        self.regex = regex
        self._matcher = matcher
        self._factory = factory
        self._ended = False

    @property
    def matcher(self) -> llguidance.LLMatcher:
        return self._matcher

    @property
    def is_accepting(self) -> bool:
        """The tokens consumed so far spell a full match of the regex."""
        return self._ended or bool(self._matcher.is_accepting())

    @property
    def is_finished(self) -> bool:
        """No token can extend the match any more (or EOS was consumed): stop here."""
        return self._ended or bool(self._matcher.is_stopped())

    def advance(self, token_id: int) -> None:
        """Consume the token the model picked. Raises `ConstraintError` if not allowed."""
        if self._ended:
            raise ConstraintError(f"constraint {self.regex!r} already ended")
        if token_id in self._factory.eos_token_ids:
            if not self.is_accepting:
                raise ConstraintError(f"EOS before {self.regex!r} matched")
            self._ended = True
            return
        if not self._matcher.consume_token(token_id):
            raise ConstraintError(
                f"token {token_id} not allowed by {self.regex!r}: {self._matcher.get_error()}"
            )

    def fill_bitmask(self, row: torch.Tensor) -> None:
        """Write the allowed-token bitmask into `row` (int32, CPU, contiguous, one bit a
        token: bit j of word i is token 32*i + j)."""
        self._factory.fill_bitmasks([self], row.view(1, -1))

    def allowed_tokens(self) -> torch.Tensor:
        """A bool tensor over the vocabulary: which tokens may come next."""
        bitmask = self._factory.allocate_bitmask(1)
        self.fill_bitmask(bitmask[0])
        return bitmask_to_bool(bitmask, self._factory.vocab_size)[0]


class RegexConstraintFactory:
    """Compiles regex constraints for one tokenizer. Build it once per model (~0.4 s)."""

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase, *, eos_token_ids: Sequence[int] = ()
    ) -> None:
        eos = sorted({int(t) for t in eos_token_ids} | _tokenizer_eos(tokenizer))
        if not eos:
            raise ValueError("a constrained tokenizer needs at least one EOS token id")
        self._tokenizer = llguidance.hf.from_tokenizer(tokenizer, eos_token=eos)  # type: ignore[arg-type]
        _check_same_text(tokenizer, self._tokenizer)
        self.vocab_size: int = int(self._tokenizer.vocab_size)
        self.eos_token_ids: frozenset[int] = frozenset(int(t) for t in self._tokenizer.eos_tokens)
        self._executor = llguidance.LLExecutor()
        self._words = (self.vocab_size + BITS_PER_WORD - 1) // BITS_PER_WORD

    def validate(self, regex: str) -> str | None:
        """The error text when `regex` cannot constrain this tokenizer, else None."""
        message = str(llguidance.LLMatcher.validate_grammar(_grammar(regex), self._tokenizer))
        return _error_text(message)

    def start(self, regex: str) -> RegexConstraint:
        """A fresh constraint; raises `HakariInputError` for an invalid regex."""
        matcher = llguidance.LLMatcher(self._tokenizer, _grammar(regex), log_level=0)
        if matcher.is_error():
            raise HakariInputError(
                f"invalid regex {regex!r}: {matcher.get_error().strip()}", field="regex"
            )
        return RegexConstraint(regex, matcher, self)

    def allocate_bitmask(self, rows: int) -> torch.Tensor:
        return torch.full((rows, self._words), -1, dtype=torch.int32)

    def fill_bitmasks(self, constraints: Sequence[RegexConstraint], bitmask: torch.Tensor) -> None:
        """Fill row i of `bitmask` (from `allocate_bitmask`) for constraints[i], in parallel."""
        if bitmask.dtype != torch.int32 or not bitmask.is_contiguous() or bitmask.is_cuda:
            raise ValueError("bitmask must be a contiguous int32 CPU tensor")
        if bitmask.shape[0] < len(constraints) or bitmask.shape[1] != self._words:
            raise ValueError(f"bitmask shape {tuple(bitmask.shape)} does not fit")
        pairs = [(c.matcher, i) for i, c in enumerate(constraints)]
        self._executor.unsafe_compute_mask_ptr(
            pairs, bitmask.data_ptr(), self._words * 4, bitmask.shape[0]
        )


# English, Japanese and a number: byte-level and SentencePiece tokenizers alike.
PROBE_TEXT = "Yes, 東京は日本の首都です。 0.5"


def _check_same_text(tokenizer: PreTrainedTokenizerBase, ll: llguidance.LLTokenizer) -> None:
    """llguidance reads the tokens' text from the tokenizer's JSON itself; where it reads
    them otherwise than the tokenizer decodes them, every constraint would hold the model
    to the wrong text (transformers 5.17 converted SmolLM2's GGUF byte-level tokenizer
    with SentencePiece's byte fallback: llguidance then read its Japanese as raw bytes
    and allowed no answer but the end)."""
    ids = list(tokenizer(PROBE_TEXT, add_special_tokens=False)["input_ids"])
    theirs, ours = str(tokenizer.decode(ids)).strip(), ll.decode_str(ids).strip()
    if theirs != ours:
        raise ModelLoadError(
            f"regex-constrained decoding cannot read this tokenizer: it decodes {theirs!r}, "
            f"llguidance reads the same tokens as {ours!r} (transformers before 5.19 "
            "converted GGUF tokenizers so: convert it again with a later one; a packaged "
            "model converts again once its folder under the cache's models/ is deleted)"
        )


def _tokenizer_eos(tokenizer: PreTrainedTokenizerBase) -> set[int]:
    eos = tokenizer.eos_token_id
    return set() if eos is None else {int(eos)}


def bitmask_to_bool(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Unpack an int32 bitmask [rows, words] to bool [rows, vocab_size] (plain ops: the
    torch-compiled helpers of llguidance cost seconds on their first CPU call)."""
    as_bytes = bitmask.numpy().view(np.uint8)
    bits = np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :vocab_size]
    return torch.from_numpy(bits.astype(np.bool_))


def apply_bitmask(logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    """Set the logits of disallowed tokens to -inf, in place. `logits` [rows, V] on any
    device; columns past the bitmask's vocabulary (padded embeddings) are disallowed."""
    vocab = logits.shape[-1]
    allowed = bitmask_to_bool(bitmask, min(vocab, bitmask.shape[1] * BITS_PER_WORD))
    allowed = allowed.to(logits.device, non_blocking=True)
    width = allowed.shape[1]
    logits[:, :width].masked_fill_(~allowed, float("-inf"))
    if width < vocab:
        logits[:, width:] = float("-inf")

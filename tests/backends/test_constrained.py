"""Regex constraints: the interface on its own, then through the HF backend."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

from hakari.backends.base import GenerationRequest, Message
from hakari.backends.constrained import (
    ConstraintError,
    RegexConstraintFactory,
    apply_bitmask,
    validate_regex,
)
from hakari.backends.hf import HFBackend
from hakari.errors import HakariInputError, ModelLoadError

JAPANESE_AND_ENGLISH = [
    "(はい|いいえ)",
    r"[0-5](\.[0-9])?",
    "[A-E]",
    "(yes|no)",
    "[0-2]",
    r"[^\n]{1,120}",
    "(東京|大阪|京都)です",
]


@pytest.fixture(scope="module")
def tokenizer(smollm2_folder: Path) -> PreTrainedTokenizerBase:
    return AutoTokenizer.from_pretrained(smollm2_folder)


@pytest.fixture(scope="module")
def factory(tokenizer: PreTrainedTokenizerBase) -> RegexConstraintFactory:
    return RegexConstraintFactory(tokenizer)


def _ids(tokenizer: PreTrainedTokenizerBase, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_validate_regex_reports_errors() -> None:
    assert validate_regex("[0-2]") is None
    assert validate_regex("(はい|いいえ)") is None
    error = validate_regex("(yes|no")
    assert error is not None and "unclosed group" in error
    assert validate_regex("(?=a)b") is not None  # look-around is not supported


@pytest.mark.slow
def test_start_rejects_invalid_regex(factory: RegexConstraintFactory) -> None:
    assert factory.validate("[0-") is not None
    with pytest.raises(HakariInputError, match="invalid regex"):
        factory.start("[0-")


def test_finished_match_may_continue(
    factory: RegexConstraintFactory, tokenizer: PreTrainedTokenizerBase
) -> None:
    c = factory.start(r"[0-5](\.[0-9])?")
    eos = min(factory.eos_token_ids)
    c.advance(_ids(tokenizer, "3")[0])
    assert c.is_accepting and not c.is_finished
    allowed = c.allowed_tokens()
    assert allowed[eos] and allowed[_ids(tokenizer, ".")[0]]
    for token in _ids(tokenizer, ".5"):
        c.advance(token)
    assert c.is_finished and c.is_accepting

    a_or_ab = factory.start("a|ab")
    a_or_ab.advance(_ids(tokenizer, "a")[0])
    assert a_or_ab.is_accepting and not a_or_ab.is_finished  # outlines-core's bug


@pytest.mark.slow
def test_eos_only_where_the_regex_accepts(
    factory: RegexConstraintFactory, tokenizer: PreTrainedTokenizerBase
) -> None:
    c = factory.start("(はい|いいえ)")
    eos = min(factory.eos_token_ids)
    assert not c.allowed_tokens()[eos]
    with pytest.raises(ConstraintError):
        c.advance(eos)
    c2 = factory.start("[0-2]")
    with pytest.raises(ConstraintError):
        c2.advance(_ids(tokenizer, "7")[0])


def test_mask_is_exactly_the_matching_tokens(
    factory: RegexConstraintFactory, tokenizer: PreTrainedTokenizerBase
) -> None:
    allowed = factory.start("[0-2]").allowed_tokens()
    expected = {
        i
        for i in range(len(tokenizer))
        if tokenizer.decode([i]) in {"0", "1", "2"} and i not in tokenizer.all_special_ids
    }
    assert set(torch.nonzero(allowed).flatten().tolist()) == expected


def test_apply_bitmask_masks_disallowed_and_padded_columns(
    factory: RegexConstraintFactory,
) -> None:
    constraints = [factory.start("[0-2]"), factory.start("[A-E]")]
    bitmask = factory.allocate_bitmask(2)
    factory.fill_bitmasks(constraints, bitmask)
    logits = torch.zeros(2, factory.vocab_size + 64)  # a model with padded embeddings
    apply_bitmask(logits, bitmask)
    for row, c in enumerate(constraints):
        finite = torch.isfinite(logits[row])
        assert not finite[factory.vocab_size :].any()
        assert torch.equal(finite[: factory.vocab_size], c.allowed_tokens())


@pytest.mark.slow
def test_sampled_outputs_always_match(tiny_random_backend: HFBackend) -> None:
    """A random model samples almost uniformly: only the constraint keeps it in line."""
    requests = [
        GenerationRequest(
            prompt=f"Answer {seed}:", max_new_tokens=60, regex=rx, temperature=1.0, seed=seed
        )
        for rx in JAPANESE_AND_ENGLISH
        for seed in range(6)
    ]
    results = tiny_random_backend.generate(requests, batch_size=8)
    for request, result in zip(requests, results, strict=True):
        assert result.finish_reason in ("regex_done", "eos"), (request.regex, result)
        assert re.fullmatch(request.regex or "", result.text), (request.regex, result.text)
    assert len({r.text for r in results if r.text}) > len(JAPANESE_AND_ENGLISH)


@pytest.mark.slow
def test_real_model_outputs_match_english_and_japanese(smollm2_backend: HFBackend) -> None:
    questions = [
        "Is the sky blue? Answer はい or いいえ.",
        "Rate this movie from 0 to 5: 'a masterpiece'.",
        "Which letter comes first in the alphabet? Options: A, B, C, D, E.",
        "Describe Tokyo in one line.",
    ]
    requests = [
        GenerationRequest(prompt="", messages=(Message("user", q),), max_new_tokens=40, regex=rx)
        for q in questions
        for rx in ("(はい|いいえ)", r"[0-5](\.[0-9])?", "[A-E]", r"[^\n]{1,120}")
    ]
    results = smollm2_backend.generate(requests, batch_size=8)
    for request, result in zip(requests, results, strict=True):
        assert request.regex is not None
        if result.finish_reason != "length":
            assert re.fullmatch(request.regex, result.text), (request.regex, result.text)
        else:  # cut by the token budget: a prefix of a match, never off the regex
            assert request.regex == r"[^\n]{1,120}" and "\n" not in result.text


@pytest.mark.slow
def test_stops_as_soon_as_the_regex_is_complete(smollm2_backend: HFBackend) -> None:
    requests = [
        GenerationRequest(prompt=f"Pick 0, 1 or 2 for item {i}:", max_new_tokens=5, regex="[0-2]")
        for i in range(3)
    ]
    for result in smollm2_backend.generate(requests):
        assert result.n_tokens == 1
        assert result.finish_reason == "regex_done"
        assert result.text in {"0", "1", "2"}


@pytest.mark.slow
def test_gemma_japanese_constrained(gemma_backend: HFBackend) -> None:
    prompt = "質問: 富士山は日本で一番高い山ですか？\n答え（はい/いいえ）:"
    requests = [
        GenerationRequest(prompt=prompt, max_new_tokens=8, regex="(はい|いいえ)"),
        GenerationRequest(prompt="東京は日本の", max_new_tokens=20, regex=r"[^\n。]{1,30}。?"),
    ]
    results = gemma_backend.generate(requests)
    assert results[0].text in {"はい", "いいえ"} and results[0].finish_reason == "regex_done"
    assert re.fullmatch(r"[^\n。]{1,30}。?", results[1].text)
    # Control tokens the converted tokenizer left unflagged are never produced.
    assert "<start_of_image>" not in results[1].text


@pytest.mark.slow
def test_a_tokenizer_that_llguidance_reads_otherwise_is_refused(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    """transformers 5.17 converted SmolLM2's GGUF tokenizer (byte-level BPE) with
    SentencePiece's decoders in front of the byte-level one: it still decodes right, but
    llguidance read its Japanese as raw bytes, and `(はい|いいえ)` allowed only the end."""
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    spec["decoder"] = {
        "type": "Sequence",
        "decoders": [
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            spec["decoder"],
        ],
    }
    converted = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(spec)), eos_token=tokenizer.eos_token
    )
    ids = converted("東京", add_special_tokens=False)["input_ids"]
    assert converted.decode(ids) == "東京"  # the tokenizer itself is fine
    with pytest.raises(ModelLoadError, match="llguidance reads the same tokens as"):
        RegexConstraintFactory(converted)

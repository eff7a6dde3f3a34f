"""The transformers backend's decoding loop: a row leaves the batch when it ends, one
prompt is prefilled once for all its rows, and the tokens are `generate`'s."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

import pytest
import torch

from hakari.backends.base import GenerationRequest, LoglikRequest
from hakari.backends.hf import HFBackend, decode, loading
from hakari.backends.hf.prefill import prefill_tokens, prefix_split
from hakari.backends.hf.scheduling import by_length_runs, left_pad, schedule
from hakari.backends.hf.step import PASS_TOKENS


@contextmanager
def rows_per_forward(backend: HFBackend) -> Iterator[list[int]]:
    """The batch size of every forward pass the model makes meanwhile."""
    sizes: list[int] = []

    def record(module: object, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        assert isinstance(ids, torch.Tensor)
        sizes.append(ids.shape[0])

    handle = backend.model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        yield sizes
    finally:
        handle.remove()


def _free(prompt: str, max_new_tokens: int) -> GenerationRequest:
    return GenerationRequest(prompt=prompt, max_new_tokens=max_new_tokens, stop=())


def test_a_row_that_ended_leaves_the_batch(tiny_random_backend: HFBackend) -> None:
    """`generate` computed all three rows until the longest ended (8 passes of 3)."""
    requests = [_free("a b c", 1), _free("Hello there", 4), _free("1, 2, 3,", 8)]
    with rows_per_forward(tiny_random_backend) as sizes:
        results = tiny_random_backend.generate(requests, batch_size=3)
    assert [r.n_tokens for r in results] == [1, 4, 8]
    # the prefill gives every row its first token; each later pass only the live rows
    assert sizes == [3, 2, 2, 2, 1, 1, 1, 1]
    alone = [tiny_random_backend.generate([r])[0] for r in requests]
    assert results == alone


def test_requests_on_one_prompt_share_its_prefill(tiny_random_backend: HFBackend) -> None:
    prompt = "The answer (A or B) is"
    greedy = GenerationRequest(prompt=prompt, max_new_tokens=5, stop=())
    constrained = GenerationRequest(prompt=prompt, max_new_tokens=5, stop=(), regex="[AB]")
    other = _free("Something else entirely", 3)
    with rows_per_forward(tiny_random_backend) as sizes:
        together = tiny_random_backend.generate([greedy, constrained, other], batch_size=8)
    assert sizes[0] == 2  # two distinct prompts prefilled, three rows answered
    assert together[1].text in ("A", "B") and together[1].finish_reason == "regex_done"
    assert together == [tiny_random_backend.generate([r])[0] for r in (greedy, constrained, other)]


def test_batch_size_counts_distinct_prompts() -> None:
    requests = [_free(p, 4) for p in ("p", "q", "p", "r", "q")]
    prompts = [[1, 2], [3, 4], [1, 2], [5], [3, 4]]
    batches = list(schedule(requests, prompts, 2))
    assert sorted(sorted(b) for b in batches) == [[0, 1, 2, 4], [3]]


def test_tokens_are_those_of_transformers_generate(tiny_random_backend: HFBackend) -> None:
    """Rows of one length (none leaves early): token for token what `model.generate`
    gives the same left-padded batch."""
    backend = tiny_random_backend
    prompts = ["Once upon a time", "1, 2, 3,", "東京は", "x"]
    ours = backend.generate([_free(p, 7) for p in prompts], batch_size=4)
    ids = [list(backend.tokenizer(p)["input_ids"]) for p in prompts]
    input_ids, attention = left_pad(ids, backend.pad_token_id)
    with torch.inference_mode():
        out = backend.model.generate(
            input_ids=input_ids.to(backend.device),
            attention_mask=attention.to(backend.device),
            max_new_tokens=7,
            min_new_tokens=7,
            do_sample=False,
            pad_token_id=backend.pad_token_id,
        )
    theirs = [
        backend.tokenizer.decode(row[input_ids.shape[1] :], skip_special_tokens=True)
        for row in out.tolist()
    ]
    assert [r.text for r in ours] == theirs


def test_the_decoding_loop_warns_nothing(tiny_random_backend: HFBackend) -> None:
    """hakari's own use of transformers raises no deprecation warning (issue 26: the
    cache argument renamed past_key_values -> cache in transformers 5.x)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tiny_random_backend.generate([_free("Hello", 4), _free("Hi there", 3)], batch_size=2)


def _reviews_and_questions() -> list[GenerationRequest]:
    reviews = [
        "The battery lasts for days and the screen is bright and sharp in the sun.",
        "The film was far too long and I fell asleep twice before the end of it.",
        "Delivery took three weeks and the box arrived crushed, with parts missing.",
    ]
    questions = ["Is this review positive or negative?", "Did the writer like it? Yes or no:"]
    prompts = [f"Review: {r}\n{q}" for r in reviews for q in questions]
    return [_free(p, 5) for p in prompts] + [_free("Unrelated prompt", 3)]


def _passes_cost_nothing(backend: HFBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans counted by their tokens alone: the tiny prompts here share too few tokens
    to be worth a pass of their own at a real model's cost."""
    monkeypatch.setattr(backend.step, "pass_tokens", 0)


def test_prompts_that_begin_alike_prefill_their_prefix_once(
    tiny_random_backend: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two templates of each of three instances (the instance text first), as a tree
    (a pass costing nothing of its own, so that the tree is the cheaper plan): each
    shared beginning runs once, then its prompts' rests against copies of its keys and
    values, and the groups are stacked into one batch to decode; the tokens are those
    of each prompt run alone."""
    _passes_cost_nothing(tiny_random_backend, monkeypatch)
    requests = _reviews_and_questions()
    with rows_per_forward(tiny_random_backend) as sizes:
        together = tiny_random_backend.generate(requests, batch_size=8)
    # the first instance's beginning alone, ...; then the decoding steps of all 7 rows
    assert sizes[0] == 1 and 7 in sizes
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        alone = [tiny_random_backend.generate([r])[0] for r in requests]
    assert together == alone


def test_a_cache_of_other_layers_prefills_in_two_passes(
    tiny_random_backend: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the model's cache cannot be stacked from a tree's groups (sliding-window
    layers), or where a tree's passes cost more: the distinct beginnings in one pass,
    the rests in a second; the same tokens."""
    monkeypatch.setattr(tiny_random_backend.step, "plain_cache", False)
    _passes_cost_nothing(tiny_random_backend, monkeypatch)
    requests = _reviews_and_questions()
    with rows_per_forward(tiny_random_backend) as sizes:
        together = tiny_random_backend.generate(requests, batch_size=8)
    assert sizes[:2] == [4, 7]  # 3 shared beginnings + 1 prompt alone, then 7 rests
    assert together == [tiny_random_backend.generate([r])[0] for r in requests]


def test_a_space_of_nested_prefixes_decodes_as_each_prompt_alone(
    tiny_random_backend: HFBackend,
) -> None:
    """A prompt space's shape: two instructions, each with 0 and 2 shots, three
    questions each (shared parts nested, lengths far apart in one batch); the
    stacked cache is left-padded to the longest prompt and every row decodes what it
    would alone."""
    instructions = [
        "Answer the question with the letter of the right choice and nothing else.",
        "Read the question below carefully, then reply with one letter: A, B, C or D.",
    ]
    shots = "Q: What is 2 + 2? A) 3 B) 4 C) 5 D) 6\nAnswer: B\n" * 2
    questions = ["Q: Which is a fruit? A) car B) apple", "Q: Which is blue? A) sky", "Q: x"]
    requests = [
        _free(f"{i}\n{s}{q}\nAnswer:", 4)
        for i in instructions
        for s in ("", shots)
        for q in questions
    ]
    with rows_per_forward(tiny_random_backend) as sizes:
        together = tiny_random_backend.generate(requests, batch_size=16)
    assert 1 in sizes and len(requests) in sizes  # parts once, the rows decoded together
    assert together == [tiny_random_backend.generate([r])[0] for r in requests]


def test_prefix_split_only_where_it_saves() -> None:
    long = list(range(100, 140))
    assert prefix_split([[*long, 1], [*long, 2, 3]]) == ([long], [0, 0])
    # nothing shared, or too little to be worth a second pass: one pass
    assert prefix_split([[1, 2, 3], [4, 5, 6]]) is None
    assert prefix_split([[*long[:16], *range(184)], [*long[:16], *range(200, 384)]]) is None


def test_one_instances_templates_share_a_batch_and_its_text_after_a_system_prompt() -> None:
    """Chat prompts all begin with the same system prompt; after it, each instance's
    text is shared by its templates. They are batched together (not by length) and
    split after the instance's text, not after the system prompt only."""
    system = list(range(1000, 1020))
    instances = [list(range(2000 + 100 * k, 2040 + 100 * k)) for k in range(3)]
    questions = [[7] * 3, [8] * 9]  # two templates, of different lengths
    prompts = [[*system, *text, *q] for text in instances for q in questions]
    requests = [_free(str(i), 4) for i in range(len(prompts))]
    costs = (  # a pass costing nothing of its own
        None,
        partial(prefill_tokens, tree=False, pass_tokens=0),
        partial(prefill_tokens, tree=True, pass_tokens=0),
    )
    for cost in costs:  # the token order reads fewer tokens here
        batches = list(schedule(requests, prompts, 2, cost))
        assert sorted(sorted(b) for b in batches) == [[0, 1], [2, 3], [4, 5]]
    split = prefix_split(prompts)
    assert split is not None
    heads, head_of = split
    assert heads == [[*system, *text] for text in instances]
    assert head_of == [0, 0, 1, 1, 2, 2]


def _zero_and_three_shot_prompts() -> list[list[int]]:
    instructions = [list(range(1000, 1020)), list(range(2000, 2020))]
    shots = {0: [], 3: list(range(3000, 3300))}
    return [
        [*instruction, *shots[n], 5000 + q, 5100 + q]
        for instruction in instructions
        for n in (3, 0)
        for q in range(3)
    ]


def _lengths(prompts: list[list[int]], batches: list[list[int]]) -> list[list[int]]:
    return sorted(sorted(len(prompts[i]) for i in b) for b in batches)


def test_prompts_of_very_different_lengths_are_batched_by_length() -> None:
    """A prompt space puts 0- and 3-shot templates with one instruction side by side in
    token order; batched so and prefilled in two passes, the short prompts are padded
    to the long ones. With that prefill's cost the batches come from the length order,
    which reads fewer tokens."""
    prompts = _zero_and_three_shot_prompts()
    requests = [_free(str(i), 4) for i in range(len(prompts))]
    cost = partial(prefill_tokens, tree=False)
    by_tokens = list(schedule(requests, prompts, 4))
    by_cost = list(schedule(requests, prompts, 4, cost))

    def read(batches: list[list[int]]) -> int:
        return sum(cost([prompts[i] for i in b]) for b in batches)

    lengths = [[22, 22, 22, 322], [22, 22, 322, 322], [22, 322, 322, 322]]
    assert _lengths(prompts, by_tokens) == lengths
    assert _lengths(prompts, by_cost) == [[22, 22, 22, 22], [22, 22, 322, 322], [322] * 4]
    assert read(by_cost) < read(by_tokens)


def test_a_tree_prefill_reads_each_shared_part_once() -> None:
    """The same prompts prefilled as a tree: one instruction's 0- and 3-shot templates
    share it, the 3-shot ones their shots; each part runs once, far fewer tokens than
    one pass or two, and the batches read no more than the token order's."""
    prompts = _zero_and_three_shot_prompts()
    requests = [_free(str(i), 4) for i in range(len(prompts))]
    cost = partial(prefill_tokens, tree=True)

    def read(batches: list[list[int]]) -> int:
        return sum(cost([prompts[i] for i in b]) for b in batches)

    chosen = list(schedule(requests, prompts, 4, cost))
    assert read(chosen) <= read(list(schedule(requests, prompts, 4)))
    first = [prompts[i] for i in sorted(range(len(prompts)), key=lambda i: prompts[i])[:4]]
    # instruction (20) + shots (300) + three rests of 2 + one 0-shot rest of 2, each part
    # and each group of rests a pass (PASS_TOKENS)
    assert cost(first) == 20 + 300 + 3 * 2 + 2 + 4 * PASS_TOKENS
    assert cost(first) < partial(prefill_tokens, tree=False)(first) < 4 * 322


def test_the_shared_prefix_loglik_warns_nothing(tiny_random_backend: HFBackend) -> None:
    """The log-likelihood pass over one template's prompts (a shared instruction) runs
    through the same cache argument as the decoding loop: no deprecation warning, and
    the scores of each request scored alone."""
    instruction = "Read the question and answer with the letter of the right option only. "
    requests = [
        LoglikRequest(prompt=f"{instruction}Question {q}: pick one.", continuations=(" A", " B"))
        for q in range(3)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        together = tiny_random_backend.loglik(requests, batch_size=8)
    alone = [tiny_random_backend.loglik([r])[0] for r in requests]
    for t, a in zip(together, alone, strict=True):
        assert t.logprobs == pytest.approx(a.logprobs, abs=1e-4)


def test_rows_of_very_different_lengths_run_apart() -> None:
    """Rows under one shared prefix: padded into one pass only where that reads fewer
    tokens than a pass of their own."""
    apart = (300 * 2 + 30 * 2 + 2 * 8, [[0, 2], [1, 3]])  # 296 pads to 300
    assert by_length_runs([300, 30, 296, 25], 8) == apart
    assert by_length_runs([300, 30, 296, 25], 1000) == (4 * 300 + 1000, [[0, 2, 1, 3]])
    assert by_length_runs([10, 9, 8], PASS_TOKENS) == (3 * 10 + PASS_TOKENS, [[0, 1, 2]])
    assert by_length_runs([5], PASS_TOKENS) == (5 + PASS_TOKENS, [[0]])
    cost, runs = by_length_runs([40, 1, 17, 90, 3, 3, 60], PASS_TOKENS)
    assert sorted(i for run in runs for i in run) == list(range(7))
    assert cost <= 7 * 90 + PASS_TOKENS  # never more than one pass


def _long_and_short() -> list[GenerationRequest]:
    """Prompts of far-apart lengths, answers that end at different steps."""
    words = "one two three four five six seven eight nine ten eleven twelve".split()
    return [_free(" ".join(words[: 1 + 2 * i]), 3 + i % 4) for i in range(6)]


def test_the_live_rows_of_several_batches_decode_together(
    tiny_random_backend: HFBackend,
) -> None:
    """Batches of two prompts each: each batch's rows join those still decoding (their
    caches left-padded to one width), up to the limit of four batches' rows, and every
    row decodes what it would alone; each row is reported once, as it ends."""
    requests = _long_and_short()
    reported: list[list[int]] = []
    with rows_per_forward(tiny_random_backend) as sizes:
        together = tiny_random_backend.generate(
            requests, batch_size=2, on_results=lambda b: reported.append([i for i, _ in b])
        )
    assert max(sizes) > 2 and max(sizes) <= 4 * 2  # rows of several batches in one step
    assert sorted(i for b in reported for i in b) == list(range(len(requests)))
    assert together == [tiny_random_backend.generate([r])[0] for r in requests]


def test_each_row_is_handed_on_in_the_step_it_ends(tiny_random_backend: HFBackend) -> None:
    """Rows of one batch that end at different steps: each result reaches `on_results`
    before the next forward pass (so the cache commits it then), not when the batch's
    last row ends; the rows that end in one step come together."""
    requests = [_free("a b c", 1), _free("Hello there", 4), _free("1, 2, 3,", 8)]
    events: list[str | list[int]] = []
    with rows_per_forward(tiny_random_backend) as sizes:
        handle = tiny_random_backend.model.register_forward_pre_hook(
            lambda *_: events.append("forward")
        )
        try:
            results = tiny_random_backend.generate(
                requests,
                batch_size=3,
                on_results=lambda ended: events.append(sorted(i for i, _ in ended)),
            )
        finally:
            handle.remove()
    assert sizes == [3, 2, 2, 2, 1, 1, 1, 1]
    # the prefill's token ends row 0, the 4th token row 1, the 8th row 2
    assert events == ["forward", [0], *["forward"] * 3, [1], *["forward"] * 4, [2]]
    assert [r.n_tokens for r in results] == [1, 4, 8]


@pytest.mark.slow
@pytest.mark.parametrize("why", ["sliding-window layers", "over the bytes bound"])
def test_caches_that_cannot_be_stacked_decode_a_batch_at_a_time(
    tiny_random_backend: HFBackend, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    """Where a batch's cache cannot take room (sliding-window layers), or the caches
    together would take more memory than the pool's bound, the rows still decoding end
    before its rows start: no step computes more than one batch."""
    if why == "sliding-window layers":
        monkeypatch.setattr(decode, "make_roomy", lambda cache: False)
    else:
        monkeypatch.setattr(loading, "CPU_DECODE_CACHE_BYTES", 1)
        monkeypatch.setattr(loading, "CUDA_DECODE_CACHE_SHARE", 1e-12)
    requests = _long_and_short()
    with rows_per_forward(tiny_random_backend) as sizes:
        apart = tiny_random_backend.generate(requests, batch_size=2)
    assert max(sizes) <= 2
    assert apart == [tiny_random_backend.generate([r])[0] for r in requests]


def test_the_pool_is_bounded_by_the_free_memory_of_a_cuda_device(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four batches' rows on a CPU and on CUDA; on CUDA the cache within a share of the
    memory free when generation starts; another accelerator one batch at a time."""
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10 << 30, 80 << 30))
    rows, cpu_bytes = loading.decode_pool_limits(torch.device("cpu"), 32)
    assert (rows, cpu_bytes) == (128, loading.CPU_DECODE_CACHE_BYTES)
    rows, cuda_bytes = loading.decode_pool_limits(torch.device("cuda", 0), 32)
    assert rows == 128 and cuda_bytes == int((10 << 30) * loading.CUDA_DECODE_CACHE_SHARE)
    assert loading.decode_pool_limits(torch.device("mps"), 32) == (32, None)

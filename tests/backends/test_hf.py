"""The transformers backend: scheduling, stopping, sampling, chat rendering, loglik."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from hakari.backends.base import (
    Backend,
    GenerationRequest,
    GenerationResult,
    LoglikRequest,
    LoglikResult,
    Message,
)
from hakari.backends.hf import HFBackend
from hakari.backends.hf.prefixes import prefix_groups, prefix_tree

G = GenerationRequest


def _greedy(prompt: str, max_new_tokens: int = 6, **kw: object) -> GenerationRequest:
    return GenerationRequest(prompt=prompt, max_new_tokens=max_new_tokens, **kw)  # type: ignore[arg-type]


MIXED_PROMPTS = [
    "a",
    "The quick brown fox jumps over the lazy dog and keeps running",
    "1, 2, 3,",
    "東京は",
    "Hello there, how",
    "x y z",
    "Lorem ipsum dolor sit amet, consectetur",
]


def test_is_a_backend(tiny_random_backend: HFBackend) -> None:
    assert isinstance(tiny_random_backend, Backend)
    assert tiny_random_backend.identity.backend == "hf"
    assert tiny_random_backend.identity.revision.startswith("local-")


def test_results_in_request_order_and_on_results_covers_each_index_once(
    tiny_random_backend: HFBackend,
) -> None:
    """Every request reaches `on_results` once (with the result it returns), whatever
    batches and steps it ended in."""
    requests = [
        _greedy(p, max_new_tokens=3 + i % 3, stop=())
        for i, p in enumerate(MIXED_PROMPTS + MIXED_PROMPTS[:4])
    ]
    batches: list[list[tuple[int, GenerationResult]]] = []
    results = tiny_random_backend.generate(requests, batch_size=3, on_results=batches.append)
    seen = [i for batch in batches for i, _ in batch]
    assert sorted(seen) == list(range(len(requests)))
    assert {i: r for b in batches for i, r in b} == dict(enumerate(results))
    alone = [tiny_random_backend.generate([r])[0] for r in requests]
    assert results == alone
    for request, result in zip(requests, results, strict=True):
        assert result.n_tokens == request.max_new_tokens and result.finish_reason == "length"


@pytest.mark.slow
def test_seeded_sampling_does_not_depend_on_the_batch(tiny_random_backend: HFBackend) -> None:
    def sample(seed: int, prompt: str = "Once upon a time") -> GenerationRequest:
        return GenerationRequest(
            prompt=prompt, max_new_tokens=8, temperature=1.0, top_p=0.95, seed=seed, stop=()
        )

    alone = tiny_random_backend.generate([sample(7)])[0]
    others = [sample(s, p) for s, p in zip(range(20, 25), MIXED_PROMPTS, strict=False)]
    together = tiny_random_backend.generate([*others, sample(7)], batch_size=8)[-1]
    assert together == alone
    different = tiny_random_backend.generate([sample(s) for s in range(8)])
    assert len({r.text for r in different}) > 1


def test_top_k_one_is_greedy(tiny_random_backend: HFBackend) -> None:
    greedy = tiny_random_backend.generate([_greedy("Once upon", 6, stop=())])[0]
    sampled = GenerationRequest(
        prompt="Once upon", max_new_tokens=6, temperature=2.0, top_k=1, seed=3, stop=()
    )
    assert tiny_random_backend.generate([sampled])[0].text == greedy.text


def test_stop_string_spanning_tokens_is_cut(tiny_random_backend: HFBackend) -> None:
    free = tiny_random_backend.generate([_greedy("Hello there, how", 12, stop=())])[0]
    assert len(free.text) > 6
    stop = free.text[3:7]  # a stop string somewhere inside the free text
    cut = tiny_random_backend.generate([_greedy("Hello there, how", 12, stop=(stop,))])[0]
    assert cut.finish_reason == "stop"
    assert cut.text == free.text[: free.text.index(stop)]
    assert cut.n_tokens < free.n_tokens


def test_loglik_matches_a_direct_forward_pass(tiny_random_backend: HFBackend) -> None:
    requests = [
        LoglikRequest(prompt=p, continuations=(" and then", "!", " 東京"))
        for p in MIXED_PROMPTS[:5]
    ]
    batches: list[list[tuple[int, LoglikResult]]] = []
    results = tiny_random_backend.loglik(requests, batch_size=4, on_results=batches.append)
    assert sorted(i for b in batches for i, _ in b) == list(range(len(requests)))
    tok, model = tiny_random_backend.tokenizer, tiny_random_backend.model
    for request, result in zip(requests, results, strict=True):
        ctx = tok(request.prompt)["input_ids"]
        for cont, logprob, n in zip(
            request.continuations, result.logprobs, result.n_tokens, strict=True
        ):
            assert logprob == pytest.approx(_lm_eval_pair_logprob(model, tok, ctx, cont), abs=1e-3)
            assert n == len(tok(request.prompt + cont)["input_ids"]) - len(ctx)


def _lm_eval_pair_logprob(model: object, tok: object, ctx: list[int], cont: str) -> float:
    """lm-evaluation-harness's score of a pair: the context's own tokens, then the tokens
    of tokenize(context + continuation) past len(tokenize(context))."""
    text = tok.decode(ctx, skip_special_tokens=True)  # type: ignore[attr-defined]
    whole = tok(text + cont)["input_ids"]  # type: ignore[operator]
    target = whole[len(ctx) :]
    device = model.device  # type: ignore[attr-defined]
    with torch.inference_mode():
        logits = model(torch.tensor([ctx + target], device=device)).logits[0].float()  # type: ignore[operator]
    logp = torch.log_softmax(logits, -1)[len(ctx) - 1 : -1]
    return float(logp.gather(-1, torch.tensor(target, device=device)[:, None]).sum())


def test_loglik_scores_lm_evals_sequence_where_the_boundary_merges(
    tiny_random_backend: HFBackend,
) -> None:
    """SmolLM2's BPE merges ':(' into one token, so the whole text's tokens do not begin
    with the context's: the model must read the context's own tokens, as lm-eval does
    (the sequence lm-eval scores; answers on `(A)` enumerators differed before)."""
    tok, model = tiny_random_backend.tokenizer, tiny_random_backend.model
    ctx = tok("Answer:")["input_ids"]
    assert tok("Answer:(A)")["input_ids"][: len(ctx)] != ctx  # the premise: a merge
    (result,) = tiny_random_backend.loglik([LoglikRequest("Answer:", ("(A)", "(B)", "(C)"))])
    for cont, logprob in zip(("(A)", "(B)", "(C)"), result.logprobs, strict=True):
        assert logprob == pytest.approx(_lm_eval_pair_logprob(model, tok, ctx, cont), abs=1e-3)


def test_loglik_runs_a_shared_prefix_once_with_the_same_numbers(
    tiny_random_backend: HFBackend,
) -> None:
    """The prompts of one template share its instruction and shots, and a prompt's
    multi-token continuations share the prompt: the backend runs each shared prefix
    once, and every score is what a whole forward pass gives."""
    head = "Answer the question below with one letter. Example: 2 + 2 = ? A. 3 B. 4 Answer: B\n"
    prompts = [head + q for q in ("Q: sky?", "Q: what colour is grass in spring?", "Q: 1+1?")]
    conts = ("A", "B", " C", "ア", "イ")  # ア, イ: two byte tokens each for this tokenizer
    requests = [LoglikRequest(p, conts) for p in [*prompts, "unrelated text"]]
    shapes: list[tuple[int, int]] = []
    hook = tiny_random_backend.model.register_forward_pre_hook(
        lambda _m, _a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True
    )
    try:
        results = tiny_random_backend.loglik(requests, batch_size=8)
    finally:
        hook.remove()
    tok, model = tiny_random_backend.tokenizer, tiny_random_backend.model
    assert len(tok("ア")["input_ids"]) == 2  # the premise
    ctx_lengths = [len(tok(r.prompt)["input_ids"]) for r in requests]
    # one row per distinct input: the context for single-token letters, context + first
    # token for each two-token one (3 a prompt), all of them whole
    flat = sum(3 * n + 2 for n in ctx_lengths)
    read = sum(rows * length for rows, length in shapes)
    shared = len(tok(head)["input_ids"]) - 2
    assert any(length >= shared for _, length in shapes)
    assert read < flat / 2, (read, flat)  # the head once, each prompt once
    for request, result in zip(requests, results, strict=True):
        ctx = tok(request.prompt)["input_ids"]
        for cont, logprob in zip(request.continuations, result.logprobs, strict=True):
            assert logprob == pytest.approx(_lm_eval_pair_logprob(model, tok, ctx, cont), abs=1e-3)


def test_prefix_tree_runs_each_shared_prefix_once_and_keeps_the_read_positions() -> None:
    head, p1, p2 = (1,) * 20, (2,) * 18, (3,) * 18
    rows = [head + p2 + (7,), (9,) * 30, head + p1 + (5,), head + p1 + (6,), head + p2 + (8,)]
    root = prefix_tree(rows, keep=2)
    assert (root.start, root.end, root.rows) == (0, 0, [1])
    (template,) = root.children
    assert (template.start, template.end, template.rows) == (0, 20, [])
    first, second = template.children
    # each prompt's rows share the prompt but its last `keep` tokens
    assert (first.start, first.end, sorted(first.rows)) == (20, 37, [2, 3])
    assert (second.start, second.end, sorted(second.rows)) == (20, 37, [0, 4])
    assert not first.children and not second.children
    # a shared part shorter than `shared_min` is not a pass of its own
    coarse = prefix_tree(rows, keep=2, shared_min=25)
    assert [(c.start, c.end, sorted(c.rows)) for c in coarse.children] == [
        (0, 37, [2, 3]),
        (0, 37, [0, 4]),
    ]


def test_prefix_groups_keep_the_read_positions_out_of_the_prefix() -> None:
    rows = [(1,) * 20 + (2, 3), (1,) * 20 + (4,), (1,) * 20 + (2, 3), (9,) * 30, (5,) * 3]
    assert prefix_groups(rows, keep=1) == [(20, [0, 1, 2]), (0, [3]), (0, [4])]
    # the read positions (the last `keep`) never fall inside the shared part
    assert prefix_groups(rows[:2], keep=2) == [(19, [0, 1])]
    assert prefix_groups(rows[:2], keep=2, shared_min=20) == [(0, [0]), (0, [1])]


def test_loglik_prefers_the_greedy_token(tiny_random_backend: HFBackend) -> None:
    tok = tiny_random_backend.tokenizer
    prompt = "The quick brown fox"
    first = tiny_random_backend.generate([_greedy(prompt, 1, stop=())])[0].text
    candidates = [first] + [c for c in (" cat", " dog", ".", " and", " the") if c != first]
    assert all(
        len(tok(prompt + c)["input_ids"]) == len(tok(prompt)["input_ids"]) + 1 for c in candidates
    ), "each candidate must be one token after the prompt"
    scores = tiny_random_backend.loglik([LoglikRequest(prompt, tuple(candidates))])[0]
    assert max(range(len(candidates)), key=lambda i: scores.logprobs[i]) == 0


def test_loglik_trailing_space_and_empty_continuation(tiny_random_backend: HFBackend) -> None:
    spaced, plain = tiny_random_backend.loglik(
        [LoglikRequest("Answer: ", ("yes", "")), LoglikRequest("Answer:", (" yes", ""))]
    )
    assert spaced.logprobs[0] == pytest.approx(plain.logprobs[0], abs=1e-4)
    assert spaced.logprobs[1] == 0.0 and spaced.n_tokens[1] == 0


@pytest.mark.slow
def test_render_prompt_uses_the_chat_template_only_for_messages(
    smollm2_backend: HFBackend,
) -> None:
    chat = GenerationRequest(
        prompt="ignored", max_new_tokens=1, messages=(Message("user", "Hi there"),)
    )
    rendered = smollm2_backend.render_prompt(chat)
    assert smollm2_backend.supports_chat
    assert rendered.endswith("<|im_start|>assistant\n") and "Hi there" in rendered
    assert smollm2_backend.render_prompt(_greedy("plain text")) == "plain text"
    completion = HFBackend(
        smollm2_backend.model,
        smollm2_backend.tokenizer,
        name="smollm2-135m",
        revision="x",
        prompt_format="completion",
    )
    assert completion.render_prompt(chat) == "ignored"
    assert completion.identity.prompt_format == "completion"
    assert smollm2_backend.identity.prompt_format == "chat"


@pytest.mark.slow
def test_greedy_stops_at_newline_and_batch_agrees_with_single(
    smollm2_backend: HFBackend,
) -> None:
    requests = [
        _greedy("Q: What is the capital of France?\nA:", 12),
        _greedy("List three colours:\n1.", 12),
        _greedy("Q: What is 2 + 2?\nA:", 12),
        _greedy("The weather today is", 12),
    ]
    batched = smollm2_backend.generate(requests, batch_size=4)
    for result in batched:
        assert "\n" not in result.text.lstrip()
    assert any(r.finish_reason == "stop" for r in batched)
    assert "Paris" in batched[0].text
    single = [smollm2_backend.generate([r], batch_size=1)[0] for r in requests[:2]]
    assert single == batched[:2]


@pytest.mark.slow
def test_loglik_picks_the_right_continuation(smollm2_backend: HFBackend) -> None:
    results = smollm2_backend.loglik(
        [
            LoglikRequest("The capital of France is", (" Paris", " London", " banana")),
            LoglikRequest("One, two, three, four,", (" five", " nine", " blue")),
        ]
    )
    for result in results:
        assert result.logprobs[0] == max(result.logprobs)
        assert all(lp < 0 for lp in result.logprobs)


def test_the_package_docstring_names_every_module() -> None:
    """hf/__init__.py's list of modules is the folder's: each named module exists and
    each module is named."""
    import hakari.backends.hf as hf

    folder = Path(hf.__file__).parent
    modules = {p.name for p in folder.glob("*.py")} - {"__init__.py"}
    named = set(re.findall(r"`(\w+\.py)`", hf.__doc__ or ""))
    assert named == modules

"""Comparing the answers of two runs sample by sample (samples.jsonl), and telling a
difference a near tie explains (two continuations, or two next tokens, within `TIE` nats
of each other in the in-process fp32 model) from one that nothing explains; and the
log-likelihoods a run scored against the in-process model's, value by value."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from hakari.backends.base import GenerationRequest, LoglikRequest, Message, ModelIdentity
from hakari.backends.cache import ResponseCache, request_key
from hakari.backends.hf import HFBackend
from hakari.runner.sampling import task_instances
from hakari.runner.settings import PlanOptions
from hakari.tasks.loader import Task, load_task
from hakari.tasks.prompts import RenderedPrompt, iter_numbered_chunks, select_templates

Key = tuple[str, str, str, int]  # task, decoding, template id, instance index
# fp32 vLLM and transformers differ by up to ~4e-5 in a log-prob sum (docs/serving.md):
# a flip between choices closer than this is rounding, not a bug
TIE = 1e-3


def samples(run: Path, model: str | None = None) -> dict[Key, dict[str, Any]]:
    """The samples of a run (of one model, when it has several), by key."""
    out = {}
    for line in (run / "samples.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if model is None or row["model"] == model:
            out[(row["task"], row["decoding"], row["template_id"], row["index"])] = row
    return out


@dataclass
class Agreement:
    decoding: str
    same: int
    total: int
    explained: list[tuple[Key, str, str, float]]  # key, answer A, answer B, the gap (nats)
    unexplained: list[tuple[Key, str, str, float]]

    def line(self) -> str:
        return (
            f"{self.decoding}: {self.same}/{self.total} identical outputs"
            + (f", {len(self.explained)} near ties" if self.explained else "")
            + (f", {len(self.unexplained)} UNEXPLAINED" if self.unexplained else "")
        )


def compare(
    a: dict[Key, dict[str, Any]],
    b: dict[Key, dict[str, Any]],
    decoding: str,
    reference: HFBackend,
    use_chat: bool,
) -> Agreement:
    """Outputs of `a` and `b` for one decoding; each difference measured on `reference`."""
    keys = sorted(k for k in a if k[1] == decoding)
    assert keys and keys == sorted(k for k in b if k[1] == decoding), "different samples"
    result = Agreement(decoding, 0, len(keys), [], [])
    for key in keys:
        x, y = a[key], b[key]
        if x["output"] == y["output"]:
            result.same += 1
            continue
        gap = _gap(reference, x, y, decoding, use_chat)
        target = result.explained if gap < TIE else result.unexplained
        target.append((key, x["output"], y["output"], gap))
    return result


def _messages(prompt: str, use_chat: bool) -> tuple[Message, ...] | None:
    return (Message("user", prompt),) if use_chat else None


def _gap(
    model: HFBackend, x: dict[str, Any], y: dict[str, Any], decoding: str, use_chat: bool
) -> float:
    if decoding == "loglik":  # the outputs are the chosen continuations
        request = LoglikRequest(
            prompt=x["prompt"],
            continuations=(x["output"], y["output"]),
            messages=_messages(x["prompt"], use_chat),
        )
        (scored,) = model.loglik([request])
        return abs(scored.logprobs[0] - scored.logprobs[1])
    request_g = GenerationRequest(
        prompt=x["prompt"], max_new_tokens=1, messages=_messages(x["prompt"], use_chat)
    )
    return first_divergence_gap(model, request_g, x["output"], y["output"], use_chat)


def first_divergence_gap(
    model: HFBackend, request: GenerationRequest, a: str, b: str, use_chat: bool
) -> float:
    """At the first token where two answers to one prompt part, how far apart the
    model puts the two tokens' log-probs (an answer that ends there: its EOS token)."""
    tokenizer = model.tokenizer
    rendered = model.render_prompt(request)
    prompt = list(tokenizer(rendered, add_special_tokens=not use_chat)["input_ids"])
    ids_a, ids_b = (list(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in (a, b))
    k = next(
        (i for i, (p, q) in enumerate(zip(ids_a, ids_b, strict=False)) if p != q),
        min(len(ids_a), len(ids_b)),
    )
    eos = int(tokenizer.eos_token_id)
    next_a = ids_a[k] if k < len(ids_a) else eos
    next_b = ids_b[k] if k < len(ids_b) else eos
    with torch.inference_mode():
        inputs = torch.tensor([prompt + ids_a[:k]], device=model.device)
        logprobs = model.model(inputs).logits[0, -1].float().log_softmax(-1)
    return abs(float(logprobs[next_a] - logprobs[next_b]))


def loglik_differences(
    run: Path,
    cache_dir: Path,
    reference: HFBackend,
    tasks: list[str],
    opts: PlanOptions,
    use_chat: bool,
) -> list[float]:
    """|log-prob sum of `run`'s model − `reference`'s| for every continuation scored in
    `run` (read from its response cache by the key the run wrote it under)."""
    data = json.loads((run / "results.json").read_text())
    (model,) = data["models"].values()
    identity = ModelIdentity(**model["identity"])
    requests = [
        LoglikRequest(
            prompt=rp.text,
            continuations=tuple(rp.answers),
            messages=_messages(rp.text, use_chat),
        )
        for name in tasks
        for rp in _rendered(load_task(name), opts)
        if rp.answers
    ]
    keys = [
        request_key("loglik", identity, reference.render_prompt(r), r.settings()) for r in requests
    ]
    cache = ResponseCache.in_dir(cache_dir)
    try:
        stored = cache.get_many(keys)
    finally:
        cache.close()
    assert len(stored) == len(keys), f"{len(keys) - len(stored)} scores not in {cache_dir}"
    differences = []
    for key, scored in zip(keys, reference.loglik(requests), strict=True):
        theirs = stored[key]
        assert theirs["n_tokens"] == list(scored.n_tokens)  # the same tokens were scored
        differences += [
            abs(a - b) for a, b in zip(theirs["logprobs"], scored.logprobs, strict=True)
        ]
    return differences


def _rendered(task: Task, opts: PlanOptions) -> list[RenderedPrompt]:
    templates = select_templates(task.spec, opts.templates)
    chunks = iter_numbered_chunks(task.spec, templates, task_instances(task, opts), 1 << 20)
    return [rp for chunk in chunks for rp in chunk]

"""The vLLM backend against a stand-in `vllm` (tests/stand_ins, written from vLLM's API):
what hakari passes to `LLM(...)` and `LLM.generate`, how it reads the outputs, and that
prompts and log-likelihood tokens match the transformers backend's exactly."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from hakari.backends.base import GenerationRequest, LoglikRequest, Message, StopAfter
from hakari.backends.hf import HFBackend
from hakari.backends.serving import ServingOptions
from hakari.errors import ModelLoadError
from tests.helpers.paths import STAND_INS


def _weights(path: Path) -> None:
    """A small but real safetensors file (adapters are checked by their header)."""
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"lora_A": np.zeros((8, 4), dtype=np.float32)}, str(path))


@pytest.fixture
def vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(STAND_INS))
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.") or m == "ray"]:
        monkeypatch.delitem(sys.modules, name)
    import vllm as stand_in

    stand_in.CALLS.clear()
    yield stand_in
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.") or m == "ray"]:
        sys.modules.pop(name, None)


def load(spec: str, **kwargs: object) -> Any:
    from hakari.backends.vllm import VLLMBackend

    return VLLMBackend.from_spec(spec, **kwargs)  # type: ignore[arg-type]


def test_llm_arguments(vllm: ModuleType, smollm2_folder: Path) -> None:
    opts = ServingOptions(tensor_parallel_size=4, max_model_len=2048)
    backend = load(f"vllm:{smollm2_folder}", dtype="bf16", options=opts)
    (kind, kwargs), *_ = vllm.CALLS
    assert kind == "LLM"
    assert kwargs["model"] == str(smollm2_folder.resolve())
    assert kwargs["structured_outputs_config"] == {"backend": "guidance"}
    assert kwargs["tensor_parallel_size"] == 4
    assert kwargs["dtype"] == "bfloat16"
    assert kwargs["max_model_len"] == 2048
    assert "distributed_executor_backend" not in kwargs
    assert backend.identity.backend == "vllm"
    assert backend.identity.revision.startswith("local-")
    assert backend.identity.prompt_format == "chat"


def test_generate_is_one_call_with_the_hf_backends_token_ids(
    vllm: ModuleType, smollm2_folder: Path, smollm2_backend: HFBackend
) -> None:
    backend = load(f"vllm:{smollm2_folder}")
    requests = [
        GenerationRequest(prompt="Review: fine.\nAnswer:", max_new_tokens=12),
        GenerationRequest(
            prompt="x", max_new_tokens=4, messages=(Message("user", "Is it good? 日本語"),)
        ),
        GenerationRequest(prompt="Pick:", max_new_tokens=3, regex="[0-2]", stop=()),
        GenerationRequest(
            prompt="Say:", max_new_tokens=6, temperature=0.7, top_p=0.9, top_k=20, seed=5
        ),
    ]
    seen: list[list[int]] = []
    results = backend.generate(requests, on_batch=lambda batch: seen.append([i for i, _ in batch]))
    generate_calls = [c for kind, c in vllm.CALLS if kind == "generate"]
    assert len(generate_calls) == 1
    call = generate_calls[0]
    assert [p["prompt_token_ids"] for p in call["prompts"]] == smollm2_backend._encode(requests)
    greedy, _chat, regex, sampled = call["params"]
    assert greedy.temperature == 0.0 and greedy.stop == ["\n"] and greedy.max_tokens == 12
    assert greedy.structured_outputs is None and greedy.top_k == 0
    assert regex.structured_outputs.regex == "[0-2]" and regex.stop is None
    assert (sampled.temperature, sampled.top_p, sampled.top_k, sampled.seed) == (0.7, 0.9, 20, 5)
    assert results[0].text == " positive"
    assert seen == [[0, 1, 2, 3]]


def test_stop_in_leading_whitespace_is_reasked(vllm: ModuleType, smollm2_folder: Path) -> None:
    vllm.RESPONDER = lambda ids, params: "\n\n1. Tokyo\nmore"
    try:
        backend = load(f"vllm:{smollm2_folder}")
        requests = [
            GenerationRequest(prompt="Q:", max_new_tokens=30),
            GenerationRequest(prompt="Q:", max_new_tokens=30, stop=("\n", "more")),
            GenerationRequest(prompt="Q:", max_new_tokens=30, stop=("Tokyo",)),
        ]
        results = backend.generate(requests)
    finally:
        vllm.RESPONDER = lambda ids, params: " positive\n"
    calls = [c for kind, c in vllm.CALLS if kind == "generate"]
    assert len(calls) == 2  # the first ask, then one re-ask for the two cut in whitespace
    assert [p.stop for p in calls[1]["params"]] == [None, ["more"]]
    assert [r.text for r in results] == ["\n\n1. Tokyo", "\n\n1. Tokyo", "\n\n1. "]
    assert [r.finish_reason for r in results] == ["stop", "stop", "stop"]


def test_stop_after_cuts_the_answer_line(vllm: ModuleType, smollm2_folder: Path) -> None:
    vllm.RESPONDER = lambda ids, params: "It is 1, I think\nmore"
    try:
        backend = load(f"vllm:{smollm2_folder}")
        (result,) = backend.generate(
            [
                GenerationRequest(
                    prompt="Q", max_new_tokens=20, stop_after=StopAfter(regex="1", chars=2)
                )
            ]
        )
    finally:
        vllm.RESPONDER = lambda ids, params: " positive\n"
    assert (result.text, result.finish_reason) == ("It is 1,", "stop")


def test_loglik_uses_prompt_logprobs_on_the_hf_backends_tokens(
    vllm: ModuleType, smollm2_folder: Path, smollm2_backend: HFBackend
) -> None:
    backend = load(f"vllm:{smollm2_folder}")
    requests = [
        LoglikRequest(prompt="The answer is ", continuations=("yes", "no", "")),
        LoglikRequest(prompt="", continuations=("Hello",)),
        LoglikRequest(prompt="x", continuations=(" 日本",), messages=(Message("user", "Q?"),)),
    ]
    results = backend.loglik(requests)
    (call,) = [c for kind, c in vllm.CALLS if kind == "generate"]
    assert len(set(map(id, call["params"]))) == 1  # one SamplingParams for every row
    first = call["params"][0]
    assert (first.prompt_logprobs, first.max_tokens, first.detokenize) == (1, 1, False)
    hf_pairs = [p for pairs in smollm2_backend._encode_pairs(requests) for p in pairs if p.targets]
    rows = [p["prompt_token_ids"] for p in call["prompts"]]
    assert len(rows) == len(hf_pairs) == 4
    for ids, pair in zip(rows, hf_pairs, strict=True):
        assert tuple(ids[:-1]) == pair.inputs and tuple(ids[-len(pair.targets) :]) == pair.targets
    expected = []
    for ids, pair in zip(rows, hf_pairs, strict=True):
        start = len(ids) - len(pair.targets)
        expected.append(sum(vllm.fake_logprob(p, ids[p]) for p in range(start, len(ids))))
    got = [v for r in results for v in r.logprobs]
    assert got[:2] == pytest.approx(expected[:2]) and got[2] == 0.0
    assert got[3:] == pytest.approx(expected[2:])
    assert results[0].n_tokens[2] == 0


def test_lora_request(vllm: ModuleType, smollm2_folder: Path, tmp_path: Path) -> None:
    from hakari.backends.registry import load_backend

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    _weights(adapter / "adapter_model.safetensors")
    backend = load_backend(f"vllm:{smollm2_folder}+adapter:{adapter}")
    backend.generate([GenerationRequest(prompt="Q:", max_new_tokens=3)])
    (_, llm_kwargs), (_, call) = vllm.CALLS
    assert llm_kwargs["enable_lora"] is True and llm_kwargs["max_lora_rank"] == 8
    assert (call["lora"].lora_name, call["lora"].lora_int_id) == ("adapter", 1)
    assert call["lora"].lora_path == str(adapter.resolve())
    assert backend.identity.revision.endswith("+adapter-" + backend.lora.sha256[:16])


def test_data_parallel_ranks_are_ray_actors(vllm: ModuleType, smollm2_folder: Path) -> None:
    import ray

    vllm.RESPONDER = lambda ids, params: f" {len(ids)}\n"
    try:
        opts = ServingOptions(data_parallel_size=3, tensor_parallel_size=2)
        backend = load(f"vllm:{smollm2_folder}", options=opts)
        requests = [GenerationRequest(prompt="a " * n, max_new_tokens=8) for n in range(1, 8)]
        results = backend.generate(requests)
    finally:
        vllm.RESPONDER = lambda ids, params: " positive\n"
    assert [c for c in ray.CALLS if c[0] == "actor"] == [("actor", "VLLMEngine")] * 3
    llms = [c for kind, c in vllm.CALLS if kind == "LLM"]
    assert len(llms) == 3 and all(c["distributed_executor_backend"] == "ray" for c in llms)
    sizes = [len(c["prompts"]) for kind, c in vllm.CALLS if kind == "generate"]
    assert sorted(sizes) == [2, 2, 3]
    expected = [f" {len(backend._encode(r))}" for r in requests]
    assert [r.text for r in results] == expected  # back in request order
    backend.close()
    assert len([c for c in ray.CALLS if c[0] == "kill"]) == 3


def test_missing_vllm_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    with pytest.raises(ModelLoadError, match=r"pip install 'hakari\[vllm\]'"):
        load("vllm:Qwen/Qwen2.5-7B-Instruct")


def test_spec_errors(vllm: ModuleType, smollm2_folder: Path) -> None:
    with pytest.raises(ModelLoadError, match="takes no @revision"):
        load(f"vllm:{smollm2_folder}@main")
    with pytest.raises(ModelLoadError, match="expected vllm:"):
        load("vllm:model@")
    with pytest.raises(ModelLoadError, match="unknown dtype"):
        load(f"vllm:{smollm2_folder}", dtype="int3")


@pytest.mark.parametrize(
    ("config", "rank"),
    [({"r": 8}, 8), ({"r": 4}, 8), ({"r": 48}, 64), ({"r": 320}, 320), ({"r": 1}, 1),
     ({"r": 16, "rank_pattern": {"q_proj": 96}}, 128)],
)  # fmt: skip
def test_max_lora_rank_is_a_rank_vllm_accepts(
    vllm: ModuleType, smollm2_folder: Path, tmp_path: Path, config: dict[str, Any], rank: int
) -> None:
    """vLLM's max_lora_rank is one of 1, 8, 16, ..., 512 (a pydantic Literal): an adapter of
    rank 4 or 48 loads with the next one up, and a per-module rank_pattern counts."""
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", **config}))
    _weights(adapter / "adapter_model.safetensors")
    from hakari.backends.registry import load_backend

    load_backend(f"vllm:{smollm2_folder}+adapter:{adapter}")
    assert vllm.CALLS[0][1]["max_lora_rank"] == rank


@pytest.mark.parametrize("config", [{"r": 1024}, {"r": "8"}, {"r": 8, "rank_pattern": {"q": 0}}])
def test_an_adapter_rank_vllm_cannot_take_is_one_line(
    vllm: ModuleType, smollm2_folder: Path, tmp_path: Path, config: dict[str, Any]
) -> None:
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", **config}))
    _weights(adapter / "adapter_model.safetensors")
    from hakari.backends.registry import check_spec, load_backend

    with pytest.raises(ModelLoadError, match="rank"):
        check_spec(f"vllm:{smollm2_folder}+adapter:{adapter}")  # before the run starts
    with pytest.raises(ModelLoadError, match="rank"):
        load_backend(f"vllm:{smollm2_folder}+adapter:{adapter}")
    assert not vllm.CALLS  # before any engine starts


def test_an_end_token_of_the_generation_config_ends_the_answer(
    vllm: ModuleType, smollm2_folder: Path
) -> None:
    """Gemma's <end_of_turn> is in its generation_config's eos_token_id: vLLM stops there
    with an integer stop_reason. An empty answer that ended so is final, not re-asked."""
    vllm.RESPONDER = lambda ids, params: " <end_of_turn>\n"
    backend = load(f"vllm:{smollm2_folder}", prompt_format="completion")
    (result,) = backend.generate([GenerationRequest(prompt="Q:", max_new_tokens=8)])
    assert result.finish_reason == "eos" and result.text == " "
    assert [kind for kind, _ in vllm.CALLS] == ["LLM", "generate"]

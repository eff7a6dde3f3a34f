"""The vLLM backend without a vLLM engine: what a CPU cannot run, and hakari's own logic.

Everything a CPU can run is tested on a real vLLM (tests/e2e/test_vllm_inprocess.py,
in the venv of scripts/install-vllm.sh): outputs equal to the transformers backend's for
greedy, constrained and loglik, a LoRA adapter, the dtype the engine ran in, eager mode,
engine arguments checked against vLLM's own `EngineArgs`. Here:

* tensor parallelism > 1 and Ray data-parallel placement, against the stand-in `vllm`
  and `ray` of tests/stand_ins (the only tests that use them: no GPU here);
* hakari's logic on engine answers a small real model does not give on demand (a stop
  string inside leading whitespace, an integer stop reason), on a scripted engine;
* what is checked before vLLM is imported (spec form, dtype, LoRA rank, engine-argument
  form), and what joins the identity.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

import hakari.backends.vllm as vllm_backend
from hakari.backends.base import GenerationRequest
from hakari.backends.serving import ServingOptions
from hakari.backends.vllm import Raw, VLLMBackend
from hakari.errors import HakariInputError, ModelLoadError
from tests.helpers.cli import assert_one_line, invoke
from tests.helpers.paths import STAND_INS


def _weights(path: Path) -> None:
    """A small but real safetensors file (adapters are checked by their header)."""
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"lora_A": np.zeros((8, 4), dtype=np.float32)}, str(path))


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The stand-in vllm and ray: for tensor parallelism > 1 and Ray placement only."""
    monkeypatch.syspath_prepend(str(STAND_INS))
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.") or m == "ray"]:
        monkeypatch.delitem(sys.modules, name)
    import vllm

    vllm.CALLS.clear()
    yield vllm
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.") or m == "ray"]:
        sys.modules.pop(name, None)


def load(spec: str, **kwargs: object) -> Any:
    return VLLMBackend.from_spec(spec, **kwargs)  # type: ignore[arg-type]


# -- what a CPU cannot run: the stand-in ---------------------------------------------------


def test_tensor_parallel_arguments(stand_in: ModuleType, smollm2_folder: Path) -> None:
    opts = ServingOptions(tensor_parallel_size=4, max_model_len=2048)
    backend = load(f"vllm:{smollm2_folder}", dtype="bf16", options=opts)
    (kind, kwargs), *_ = stand_in.CALLS
    assert kind == "LLM"
    assert kwargs["model"] == str(smollm2_folder.resolve())
    assert kwargs["structured_outputs_config"] == {"backend": "guidance"}
    assert kwargs["tensor_parallel_size"] == 4
    assert kwargs["dtype"] == "bfloat16" and backend.identity.dtype == "bfloat16"
    assert kwargs["max_model_len"] == 2048
    assert "distributed_executor_backend" not in kwargs
    assert backend.identity.backend == "vllm"
    assert backend.identity.revision.startswith("local-")
    assert backend.identity.prompt_format == "chat"


def test_data_parallel_ranks_are_ray_actors(stand_in: ModuleType, smollm2_folder: Path) -> None:
    import ray

    stand_in.RESPONDER = lambda ids, params: f" {len(ids)}\n"
    try:
        opts = ServingOptions(data_parallel_size=3, tensor_parallel_size=2)
        backend = load(f"vllm:{smollm2_folder}", options=opts)
        requests = [GenerationRequest(prompt="a " * n, max_new_tokens=8) for n in range(1, 8)]
        results = backend.generate(requests)
    finally:
        stand_in.RESPONDER = lambda ids, params: " positive\n"
    assert [c for c in ray.CALLS if c[0] == "actor"] == [("actor", "VLLMEngine")] * 3
    llms = [c for kind, c in stand_in.CALLS if kind == "LLM"]
    assert len(llms) == 3 and all(c["distributed_executor_backend"] == "ray" for c in llms)
    assert backend.identity.dtype == "bfloat16"  # asked of rank 0 through Ray
    sizes = [len(c["prompts"]) for kind, c in stand_in.CALLS if kind == "generate"]
    assert sorted(sizes) == [2, 2, 3]
    expected = [f" {len(backend._encode(r))}" for r in requests]
    assert [r.text for r in results] == expected  # back in request order
    backend.close()
    assert len([c for c in ray.CALLS if c[0] == "kill"]) == 3


# -- hakari's logic on scripted engine answers ---------------------------------------------


class ScriptedEngine:
    """A `VLLMEngine` whose model answers `respond(prompt ids)`; stop strings end the
    text at their first occurrence, as vLLM does (even inside leading whitespace)."""

    def __init__(self, respond: Callable[[list[int]], str], dtype: str = "float32") -> None:
        self.respond = respond
        self._dtype = dtype
        self.asked: list[list[dict[str, Any]]] = []
        self.shut_down = False

    def generate(
        self, prompts: list[list[int]], settings: list[dict[str, Any]], regexes: Any, lora: Any
    ) -> list[Raw]:
        self.asked.append(settings)
        raws = []
        for ids, params in zip(prompts, settings, strict=True):
            text = self.respond(ids)
            hits = [(text.find(s), s) for s in params["stop"] or [] if s in text]
            if hits:
                at, stop = min(hits)
                out = SimpleNamespace(text=text[:at], finish_reason="stop", stop_reason=stop)
            else:
                out = SimpleNamespace(text=text, finish_reason="stop", stop_reason=None)
            raws.append(vllm_backend.raw_output(SimpleNamespace(**vars(out), token_ids=[1, 2])))
        return raws

    def dtype(self) -> str:
        return self._dtype

    def shutdown(self) -> None:
        self.shut_down = True


def scripted(folder: Path, engine: ScriptedEngine) -> VLLMBackend:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    return VLLMBackend(
        [engine], tokenizer, name=str(folder), revision="local-test", dtype="float32"
    )


def test_stop_in_leading_whitespace_is_reasked(smollm2_folder: Path) -> None:
    engine = ScriptedEngine(lambda ids: "\n\n1. Tokyo\nmore")
    backend = scripted(smollm2_folder, engine)
    requests = [
        GenerationRequest(prompt="Q:", max_new_tokens=30),
        GenerationRequest(prompt="Q:", max_new_tokens=30, stop=("\n", "more")),
        GenerationRequest(prompt="Q:", max_new_tokens=30, stop=("Tokyo",)),
    ]
    results = backend.generate(requests)
    assert len(engine.asked) == 2  # the first ask, then one re-ask for the two cut in whitespace
    assert [p["stop"] for p in engine.asked[1]] == [None, ["more"]]
    assert [r.text for r in results] == ["\n\n1. Tokyo", "\n\n1. Tokyo", "\n\n1. "]
    assert [r.finish_reason for r in results] == ["stop", "stop", "stop"]
    backend.close()
    assert engine.shut_down  # the engine's processes stop with the backend


def test_an_integer_stop_reason_is_eos() -> None:
    """Gemma's <end_of_turn> is in its generation_config's eos_token_id: vLLM stops there
    with an integer stop_reason. An empty answer that ended so is final, not re-asked."""
    ended = vllm_backend.raw_output(
        SimpleNamespace(text=" ", finish_reason="stop", stop_reason=106, token_ids=[1, 106])
    )
    assert ended.eos and ended.finish == "stop"
    cut = vllm_backend.raw_output(
        SimpleNamespace(text=" ", finish_reason="stop", stop_reason="\n", token_ids=[1, 2])
    )
    assert not cut.eos


# -- checks before vLLM is imported; identities ----------------------------------------------


@pytest.fixture
def no_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError


@pytest.mark.usefixtures("no_vllm")
def test_missing_vllm_is_one_clear_error() -> None:
    with pytest.raises(ModelLoadError, match=r"pip install 'hakari\[vllm\]'.*install-vllm.sh"):
        load("vllm:Qwen/Qwen2.5-7B-Instruct")


@pytest.mark.usefixtures("no_vllm")
def test_spec_errors(smollm2_folder: Path) -> None:
    with pytest.raises(ModelLoadError, match="takes no @revision"):
        load(f"vllm:{smollm2_folder}@main")
    with pytest.raises(ModelLoadError, match="expected vllm:"):
        load("vllm:model@")
    with pytest.raises(ModelLoadError, match="unknown dtype"):
        load(f"vllm:{smollm2_folder}", dtype="int3")


def test_the_dtype_asked_for_is_the_engines_and_the_identity_records_the_engines(
    smollm2_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--dtype float32` (issue 15, defect 1) used to become vLLM's `auto`, which downcasts
    an fp32 checkpoint to bf16 on a CPU, and results recorded `auto`. Now: the dtype
    asked for, else `auto`; the identity holds what the engine reports."""
    from hakari.backends.registry import load_backend

    started: list[dict[str, Any]] = []

    def start(kwargs: dict[str, Any], data_parallel_size: int) -> tuple[list[Any], bool]:
        started.append(kwargs)
        chosen = "bfloat16" if kwargs["dtype"] == "auto" else kwargs["dtype"]
        return [ScriptedEngine(lambda ids: "", dtype=chosen)], False

    monkeypatch.setattr(vllm_backend.backend, "start_engines", start)  # where it is called
    monkeypatch.setitem(sys.modules, "vllm", ModuleType("vllm"))
    asked = load_backend(f"vllm:{smollm2_folder}", dtype="float32")
    assert started[-1]["dtype"] == "float32" and asked.identity.dtype == "float32"
    default = load_backend(f"vllm:{smollm2_folder}")  # no --dtype: vLLM's own choice
    assert started[-1]["dtype"] == "auto" and default.identity.dtype == "bfloat16"
    assert default.identity.revision == asked.identity.revision
    eager = load(f"vllm:{smollm2_folder}", options=ServingOptions(enforce_eager=True))
    assert started[-1]["enforce_eager"] is True and "enforce_eager" not in started[0]
    assert eager.identity == default.identity  # eager or compiled: the same numbers


def test_engine_arguments_that_can_change_answers_join_the_revision() -> None:
    assert vllm_backend.engine_revision({}) == ""
    neutral = {"max_num_seqs": 8, "kv_cache_memory_bytes": 1 << 30, "compilation_config": {}}
    assert vllm_backend.engine_revision(neutral) == ""
    fp8 = vllm_backend.engine_revision({"quantization": "fp8", **neutral})
    assert fp8.startswith("+engine-") and fp8 == vllm_backend.engine_revision(
        {"quantization": "fp8"}
    )
    assert vllm_backend.engine_revision({"kv_cache_dtype": "fp8"}) not in ("", fp8)


@pytest.mark.parametrize("arg", ["max_num_seqs", "=8", " =8"])
def test_an_engine_argument_without_key_and_value_is_one_line(arg: str) -> None:
    with pytest.raises(HakariInputError, match="KEY=VALUE") as info:
        ServingOptions(engine_args=(arg,)).check()
    assert info.value.field == "--engine-arg"
    code, out = invoke("--model", "vllm:some/model", "--engine-arg", arg, "--limit", "1")
    assert_one_line(code, out, "--engine-arg", "KEY=VALUE")


@pytest.mark.parametrize(
    ("config", "rank"),
    [({"r": 8}, 8), ({"r": 4}, 8), ({"r": 48}, 64), ({"r": 320}, 320), ({"r": 1}, 1),
     ({"r": 16, "rank_pattern": {"q_proj": 96}}, 128)],
)  # fmt: skip
def test_max_lora_rank_is_a_rank_vllm_accepts(
    tmp_path: Path, config: dict[str, Any], rank: int
) -> None:
    """vLLM's max_lora_rank is one of 1, 8, 16, ..., 512 (a pydantic Literal): an adapter of
    rank 4 or 48 loads with the next one up, and a per-module rank_pattern counts."""
    from hakari.backends.adapters import parse_adapter_spec

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", **config}))
    _weights(adapter / "adapter_model.safetensors")
    _, ref = parse_adapter_spec(f"vllm:x+adapter:{adapter}")
    assert vllm_backend.lora_rank(ref) == rank


@pytest.mark.usefixtures("no_vllm")
@pytest.mark.parametrize("config", [{"r": 1024}, {"r": "8"}, {"r": 8, "rank_pattern": {"q": 0}}])
def test_an_adapter_rank_vllm_cannot_take_is_one_line(
    smollm2_folder: Path, tmp_path: Path, config: dict[str, Any]
) -> None:
    """Before vLLM is even imported (here it cannot be)."""
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", **config}))
    _weights(adapter / "adapter_model.safetensors")
    from hakari.backends.registry import check_spec, load_backend

    with pytest.raises(ModelLoadError, match="rank"):
        check_spec(f"vllm:{smollm2_folder}+adapter:{adapter}")  # before the run starts
    with pytest.raises(ModelLoadError, match="rank"):
        load_backend(f"vllm:{smollm2_folder}+adapter:{adapter}")

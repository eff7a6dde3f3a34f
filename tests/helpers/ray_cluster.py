"""A Ray cluster of several nodes on this machine, from the vLLM venv's `ray` command:
`ray start --head` and `ray start --address` for each further node, each node with its
own CPU resources, for the multi-node tests (tests/e2e/test_vllm_ray.py).

Ray maps 127.0.0.1 to this host's own address (`ray._private.services.
resolve_ip_for_localhost`), so the nodes register under the machine's address; every node
is a process on this machine, started with `RAY_ADDRESS=127.0.0.1:<port>`.

Every node runs in a process group of its own under a temp folder of its own, and
`stop_node` / `close` kill the group and every process that descends from it (Ray's
workers, a vLLM engine in an actor), whatever way the test ends. Nothing here kills by
name (`ray stop` would stop every Ray on the machine).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from tests.helpers.servers import free_port
from tests.helpers.vllm_venv import VENV, venv_env, vllm_python

# a node's agent comes up slowly on a busy 2-core machine: Ray's 15 s defaults fail
SLOW_MACHINE = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_agent_register_timeout_ms": "300000",
    "RAY_raylet_start_wait_time_s": "300",
}
NODES_SCRIPT = """
import json, ray
ray.init(address="{address}", logging_level="ERROR", log_to_driver=False)
print(json.dumps([{{"node": n["NodeID"], "alive": n["Alive"], "cpus": n["Resources"].get("CPU", 0)}}
                  for n in ray.nodes()]))
"""


class RayCluster:
    def __init__(self, workdir: Path, *, cpus_per_node: int = 1) -> None:
        vllm_python()
        self.workdir = workdir
        self.cpus = cpus_per_node
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        # unix socket paths must stay short: not under pytest's deep tmp folders
        self.temp_dir = tempfile.mkdtemp(prefix="hakari-ray-", dir="/tmp")
        self.nodes: list[subprocess.Popen[bytes]] = []
        self._tree: set[int] = set()

    def env(self, **extra: str) -> dict[str, str]:
        return venv_env() | SLOW_MACHINE | extra

    def start_node(self, head: bool = False) -> None:
        ray = str(VENV / "bin" / "ray")
        where = (
            ["--head", f"--port={self.port}", "--include-dashboard=false",
             f"--temp-dir={self.temp_dir}"]
            if head
            else [f"--address={self.address}"]
        )  # fmt: skip
        log = (self.workdir / f"ray-node-{len(self.nodes)}.log").open("w")
        proc = subprocess.Popen(
            [ray, "start", *where, f"--num-cpus={self.cpus}", "--num-gpus=0", "--block"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env(),
            start_new_session=True,
        )
        self.nodes.append(proc)

    def node_table(self) -> list[dict[str, Any]]:
        """`ray.nodes()`: Ray's own table of the cluster's nodes."""
        done = subprocess.run(
            [str(vllm_python()), "-c", NODES_SCRIPT.format(address=self.address)],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=120,
        )
        if done.returncode != 0:
            return []
        return list(json.loads(done.stdout.strip().splitlines()[-1]))

    def wait_for(self, alive: int, timeout: float = 300.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._remember()
            table = [n for n in self.node_table() if n["alive"]]
            if len(table) == alive:
                return table
            if any(p.poll() is not None for p in self.nodes):
                break
            time.sleep(2.0)
        logs = "".join(
            p.read_text(errors="replace")[-1500:] for p in self.workdir.glob("ray-node-*.log")
        )
        raise RuntimeError(f"the Ray cluster did not reach {alive} live nodes:\n{logs}")

    def _remember(self) -> None:
        """Every process below a node now: they leave its process group (workers)."""
        for node in self.nodes:
            with contextlib.suppress(psutil.Error):
                self._tree.update(c.pid for c in psutil.Process(node.pid).children(recursive=True))

    def stop_node(self, index: int) -> None:
        """The node's processes killed (-9): a machine of the cluster lost."""
        self._remember()
        kill_tree(self.nodes[index])

    def close(self) -> None:
        self._remember()
        for index in reversed(range(len(self.nodes))):
            self.stop_node(index)
        _kill(self._tree)
        shutil.rmtree(self.temp_dir, ignore_errors=True)  # Ray's session files, not left in /tmp


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """A process started with `start_new_session=True`, its group, and every process
    below it (Ray's daemons and workers), by pid."""
    below: set[int] = set()
    with contextlib.suppress(psutil.Error):
        below = {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    _kill(below)
    proc.wait()


def _kill(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def ray_cluster(workdir: Path, nodes: int = 2) -> Iterator[RayCluster]:
    """A head and `nodes - 1` further nodes, one CPU each, stopped on any exit."""
    cluster = RayCluster(workdir)
    try:
        cluster.start_node(head=True)
        cluster.wait_for(1)
        for _ in range(nodes - 1):
            cluster.start_node()
        cluster.wait_for(nodes)
        yield cluster
    finally:
        cluster.close()

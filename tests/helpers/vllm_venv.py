"""The real vLLM of `scripts/install-vllm.sh` from the tests, which run in the main venv:
hakari run inside the vLLM venv, and vLLM's OpenAI-compatible server on loopback.

Every process started here runs in a process group of its own (vLLM forks an engine
core and a worker), and the whole group is killed on every way out, a failed test
included: a vLLM worker holds ~4 GB. The engines start as the measurements in
docs/serving.md say they must on a CPU: fp32 (vLLM's `auto` downcasts fp32 to bf16 on a
CPU), eager (the compiled mode recompiles for 4-5 min at every start), and a fixed KV
cache (the default reserves 90% of the machine's memory). And unbound: vLLM's default
(`VLLM_CPU_OMP_THREADS_BIND=auto`) pins every engine's compute to the first core and keeps
the other for its front end, so the suite's two vLLM groups, side by side on two workers,
shared core 0 while core 1 idled (docs/results/test-times.md: the two runs side by side in
363 and 172 s pinned, 297 and 109 s unbound; alone 298 and 118). Unbound, an engine computes
with the worker's one OpenMP thread (`OMP_NUM_THREADS`, tests/helpers/workers.py) where
the kernel puts it. vLLM's engine and front end talk over ZMQ sockets it makes in
`VLLM_RPC_BASE_PATH` (default: the temp folder) and leaves behind when a process is killed
(42 a suite run): here they go into one folder per test process, removed when it exits.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.paths import REPO, SHARED
from tests.helpers.servers import free_port, kill_group

VENV = Path(os.environ.get("HAKARI_VLLM_VENV") or REPO / ".venv-vllm")
KV_CACHE_BYTES = 512 << 20  # SmolLM2-135M in fp32: ~11k tokens
MAX_MODEL_LEN = 2048
# `hakari run` options for an in-process engine on this CPU
ENGINE_OPTIONS = (
    "--dtype", "float32", "--enforce-eager",
    "--engine-arg", f"kv_cache_memory_bytes={KV_CACHE_BYTES}",
    "--max-model-len", str(MAX_MODEL_LEN),
)  # fmt: skip
START_TIMEOUT_S = 600.0  # an engine starts in ~1 min on an idle 2-core machine

# The one-engine run every real-vLLM comparison shares (tests/e2e/conftest.py: one engine
# start for the session): the demo tasks and a JGLUE sample, every decoding.
DECODINGS = ("greedy", "constrained", "loglik")
DEMO = ("demo_sentiment_en", "demo_sentiment_ja")
JGLUE = "jcommonsenseqa"
SAMPLE = 4  # instances of each task (× its templates)
DATA = SHARED / "datasets"


@dataclass(frozen=True)
class EngineRun:
    """A finished `hakari run` on a real engine."""

    run: Path  # results.json, samples.jsonl
    cache: Path  # its response cache
    log: Path
    seconds: float


def sample_tasks() -> list[str]:
    """The demo tasks and, with ../shared there, a JGLUE sample: the one 5-choice
    Japanese task on a real engine (the suite runs it on a worker of its own since the
    tests run in parallel; it was a manual run while CI ran serially)."""
    return [*DEMO, JGLUE] if (DATA / JGLUE).is_dir() else list(DEMO)


def run_args(
    task_names: Sequence[str], out: Path, decodings: Sequence[str] = DECODINGS
) -> list[str]:
    """`hakari run` options of a sampled comparison run writing to `out`."""
    return [
        "--tasks", ",".join(task_names), "--decoding", ",".join(decodings),
        "--sample", str(SAMPLE), "--n-boot", "0", "--data-dir", str(DATA), "--output", str(out),
    ]  # fmt: skip


def vllm_python() -> Path:
    """The vLLM venv's interpreter; skips the test when the venv is not built."""
    python = VENV / "bin" / "python"
    if not (VENV / ".hakari-vllm-stamp").is_file() or not python.is_file():
        pytest.skip(f"no vLLM venv at {VENV}: bash scripts/install-vllm.sh builds it")
    return python


@functools.cache
def _rpc_dir() -> Path:
    """This process's folder for vLLM's sockets and temp files (short: a socket's path has
    at most 107 bytes; vLLM adds a 36-character name, Ray ~60), removed when the process
    exits."""
    folder = Path(tempfile.mkdtemp(prefix="hakari-vllm-rpc-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def venv_env(cache_dir: Path | None = None) -> dict[str, str]:
    """The environment of a process in the vLLM venv: this checkout's hakari, offline, and
    none of the caller's own hakari settings (CI exports HAKARI_CACHE_DIR; a test's run
    uses the cache the test gives it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAKARI_")}
    env.pop("VIRTUAL_ENV", None)
    env |= {
        "PYTHONPATH": str(REPO / "src"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_DO_NOT_TRACK": "1",
    }
    env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    env.setdefault("VLLM_RPC_BASE_PATH", str(_rpc_dir()))
    # vLLM's shared-memory folders (vllm_dist_*) and Ray's session folders go to the
    # temp folder: this one is removed with the process (in /tmp they outlived the suite)
    env.setdefault("TMPDIR", str(_rpc_dir()))
    if cache_dir is not None:
        env["HAKARI_CACHE_DIR"] = str(cache_dir)
    return env


def run_hakari(
    args: Sequence[str],
    *,
    cache_dir: Path,
    log: Path,
    timeout: float = 1800.0,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`hakari <args>` in the vLLM venv; its output goes to `log`."""
    proc = start_hakari(args, cache_dir=cache_dir, log=log, env=env)
    try:
        code = proc.wait(timeout=timeout)
    finally:
        kill_group(proc, grace=5.0)  # the engine's processes, if any outlived it
    return subprocess.CompletedProcess(proc.args, code, log.read_text(errors="replace"), "")


def start_hakari(
    args: Sequence[str], *, cache_dir: Path, log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`hakari <args>` started in the vLLM venv (a process group of its own; the caller
    waits and kills the group), its output to `log`."""
    python = vllm_python()
    with log.open("w") as out:
        return subprocess.Popen(
            [str(python), "-m", "hakari", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=venv_env() | (env or {}) | {"HAKARI_CACHE_DIR": str(cache_dir)},
            start_new_session=True,
        )


class VLLMServer:
    """`python -m vllm.entrypoints.openai.api_server` for one model folder on loopback.
    (`vllm serve` fails in the vllm-cpu build: it looks for a package named vllm.)"""

    def __init__(self, model: Path, workdir: Path, *, extra: Sequence[str] = ()) -> None:
        self.model = str(model)
        self.port = free_port()
        self.log_path = workdir / f"vllm-server-{self.port}.log"
        cmd = [
            str(vllm_python()), "-m", "vllm.entrypoints.openai.api_server",
            "--model", self.model, "--host", "127.0.0.1", "--port", str(self.port),
            "--dtype", "float32", "--enforce-eager", "--seed", "0",
            "--kv-cache-memory-bytes", str(KV_CACHE_BYTES),
            "--max-model-len", str(MAX_MODEL_LEN), *extra,
        ]  # fmt: skip
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            cmd, stdout=self._log, stderr=subprocess.STDOUT, env=venv_env(),
            start_new_session=True,
        )  # fmt: skip

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=5) as response:
                    ids = [m["id"] for m in json.load(response)["data"]]
                if self.model in ids:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self.log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the vLLM server did not start:\n{tail}")
            time.sleep(1.0)

    def kill(self) -> None:
        """kill -9 of the server and its engine: a replica that dies mid-run."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            kill_group(self.proc)
        else:  # its engine core may outlive a server that died
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


@contextlib.contextmanager
def vllm_servers(model: Path, workdir: Path, count: int = 1) -> Iterator[list[VLLMServer]]:
    """`count` servers (at most two: ~4 GB each), started together, stopped on any exit."""
    assert 1 <= count <= 2
    servers: list[VLLMServer] = []
    try:
        for _ in range(count):
            servers.append(VLLMServer(model, workdir))
        for server in servers:
            server.wait_ready()
        yield servers
    finally:
        for server in servers:
            server.stop()


def completion_latency(url: str, model: str, tokens: int) -> float:
    """Seconds for one completion of exactly `tokens` tokens (the second of two: the
    first warms up)."""
    body = json.dumps(
        {"model": model, "prompt": "Is this review positive?", "max_tokens": tokens,
         "min_tokens": tokens, "ignore_eos": True}
    )  # fmt: skip
    seconds = 0.0
    for _ in range(2):
        request = urllib.request.Request(
            f"{url}/completions", data=body.encode(), headers={"content-type": "application/json"}
        )
        started = time.monotonic()
        with urllib.request.urlopen(request, timeout=300) as response:
            response.read()
        seconds = time.monotonic() - started
    return seconds

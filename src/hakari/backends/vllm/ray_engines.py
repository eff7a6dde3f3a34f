"""Data-parallel vLLM engines as Ray actors (`--data-parallel-size N`): one engine per
actor, placed by Ray (`SPREAD`: on different nodes where the cluster has several), the
prompts of every call dealt round-robin between the living engines, and each engine's
finished answers handed back (so cached) as that engine ends its share.

The one decision a reader must know: **an engine that fails is taken out, not the run.**
An actor killed, its node stopped, or a call past `CALL_TIMEOUT_S` (taken for hung, the
actor killed): one line names the engine, and its unfinished prompts are dealt to the
engines left. When none is left the run stops with one line naming them; what finished
is in the response cache, and the same command asks only the rest. Every wait on Ray is
bounded (`PLACE_TIMEOUT_S`, `START_TIMEOUT_S`, `CALL_TIMEOUT_S`, `STOP_TIMEOUT_S`).

`RAY_ADDRESS` joins a running cluster (`ray start --head` on one node, `ray start
--address` on the others); without it a Ray instance is started here for the run and
stopped after. An address no head answers is one line before any model loads
(`check_cluster`).

Each actor reserves one CPU, and on a cluster with GPUs `--tensor-parallel-size` GPUs
(its engine's workers start inside it, vLLM's own executor); with
`--distributed-executor-backend ray` the actor reserves no GPU and vLLM places the
engine's workers through Ray (one model across nodes). On a CPU host without
`--gpu-memory-utilization`, each engine takes `cpu_memory_share` of what is free on its
node, split between the engines placed there (vLLM's CPU backend reserves that share of
the machine: two engines each asking for 0.9 of what is free cannot both start).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hakari.backends.serving import ServingOptions
from hakari.backends.vllm.engine import Lora, VLLMEngine, answer_on, score_groups_on
from hakari.backends.vllm.options import on_cpu
from hakari.backends.vllm.startup import captured_stderr, cpu_memory_share, failure_line
from hakari.errors import HakariInputError, ModelLoadError

NAMESPACE = "hakari"
PLACE_TIMEOUT_S = 300.0  # every actor placed on a node and answering
START_TIMEOUT_S = 1800.0  # every engine loaded (a 70B model from a network disk)
CALL_TIMEOUT_S = 3600.0  # one engine's share of one call; past it, the engine is hung
STOP_TIMEOUT_S = 60.0  # an engine shutting down its processes
CONNECT_TIMEOUT_S = 5.0  # the TCP probe of RAY_ADDRESS
POLL_S = 1.0
INSTALL_RAY = "pip install 'ray[default]'"


def needs_ray(opts: ServingOptions) -> bool:
    return opts.data_parallel_size > 1 or opts.distributed_executor_backend == "ray"


def check_cluster(opts: ServingOptions) -> None:
    """Before any model loads: Ray is installed where the run needs it, and a
    `RAY_ADDRESS` of the form host:port (or ray://host:port) has something listening."""
    if not needs_ray(opts):
        return
    if importlib.util.find_spec("ray") is None:
        flag = (
            "--data-parallel-size"
            if opts.data_parallel_size > 1
            else "--distributed-executor-backend"
        )
        raise HakariInputError(f"{flag} needs Ray: {INSTALL_RAY}", field=flag)
    address = os.environ.get("RAY_ADDRESS", "").strip()
    if not address or address in ("auto", "local"):
        return
    try:  # urlsplit itself refuses some (an unclosed IPv6 bracket)
        parts = urlsplit(address if "://" in address else f"ray://{address}")
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or port is None:
        raise HakariInputError(
            f"RAY_ADDRESS={address!r} is not host:port (e.g. 10.0.0.1:6379)", field="RAY_ADDRESS"
        )
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise HakariInputError(
            f"RAY_ADDRESS={address}: no Ray head answers at {host}:{port} ({reason}); start "
            "one with `ray start --head`, or unset RAY_ADDRESS to start Ray for this run",
            field="RAY_ADDRESS",
        ) from None


class EngineActor:
    """One data-parallel rank inside a Ray actor: placed first (`where`), then its engine
    started (`start`); its calls take and return plain data."""

    def __init__(self) -> None:
        self.engine: VLLMEngine | None = None

    def where(self) -> dict[str, Any]:
        import ray

        return {
            "node": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }

    def start(
        self, kwargs: dict[str, Any], engines_here: int, derive_share: bool
    ) -> dict[str, Any]:
        # the engine core in this process: the actor is the engine, so an actor killed
        # leaves no engine process behind
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        kwargs = dict(kwargs)
        memory: dict[str, Any] = {}
        if "kv_cache_memory_bytes" in kwargs:
            memory["kv_cache_memory_bytes"] = kwargs["kv_cache_memory_bytes"]
        elif derive_share and on_cpu():
            share = cpu_memory_share(engines_here)
            if share is not None:
                kwargs["gpu_memory_utilization"] = share
                memory["gpu_memory_utilization"] = share
                memory["derived"] = (
                    f"free memory on this host, split between {engines_here} engine(s)"
                )
        elif "gpu_memory_utilization" in kwargs:
            memory["gpu_memory_utilization"] = kwargs["gpu_memory_utilization"]
        log: list[str] = []
        try:
            with captured_stderr(log):
                self.engine = VLLMEngine(kwargs)
        except (OSError, ValueError, RuntimeError) as exc:
            line = failure_line(exc, log[1], Path(log[0])) if log else str(exc)
            raise RuntimeError(line) from None
        return {"dtype": self.engine.dtype(), "memory": memory}

    def answer(self, items: list[Any], lora: Lora) -> list[Any]:
        assert self.engine is not None
        return answer_on(self.engine, items, lora)

    def score_groups(self, items: list[Any], lora: Lora) -> list[Any]:
        assert self.engine is not None
        return score_groups_on(self.engine, items, lora)

    def shutdown(self) -> None:
        if self.engine is not None:
            self.engine.shutdown()


class RayEngines:
    """The data-parallel engines of one backend, and how a call is dealt to them."""

    remote = True

    def __init__(self, handles: list[Any], places: list[dict[str, Any]], started_ray: bool) -> None:
        self.handles = handles
        self.places = places
        self.started_ray = started_ray  # a Ray instance of this run's own, stopped with it
        self.info: list[dict[str, Any]] = [{} for _ in handles]
        self.served = [0] * len(handles)
        self.failed: dict[int, str] = {}

    # -- starting --------------------------------------------------------------------

    @classmethod
    def start(cls, kwargs: dict[str, Any], opts: ServingOptions) -> RayEngines:
        try:
            import ray
        except ImportError:
            raise ModelLoadError(
                f"--data-parallel-size needs Ray: {INSTALL_RAY}", field="--data-parallel-size"
            ) from None
        address = os.environ.get("RAY_ADDRESS", "").strip() or None
        started_ray = False
        if not ray.is_initialized():
            # no RAY_ADDRESS: a Ray instance of this run's own ("local"), never one a
            # `ray start` left on this machine (ray.init() would join, or wait for it)
            extra: dict[str, Any] = {} if address else {"include_dashboard": False}
            try:
                ray.init(address=address or "local", namespace=NAMESPACE, **extra)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = f"RAY_ADDRESS={address}" if address else "a Ray instance here"
                raise ModelLoadError(
                    f"cannot start or join {where}: {' '.join(str(exc).split())[:300]}",
                    field="RAY_ADDRESS" if address else "--data-parallel-size",
                ) from None
            started_ray = address in (None, "local")
        engines = cls([], [], started_ray)
        try:
            engines._place_and_start(ray, kwargs, opts)
        except BaseException:
            engines.close()
            raise
        return engines

    def _place_and_start(self, ray: Any, kwargs: dict[str, Any], opts: ServingOptions) -> None:
        n = opts.data_parallel_size
        resources = ray.cluster_resources()
        workers_through_ray = opts.distributed_executor_backend == "ray"
        gpus = 0 if workers_through_ray or not resources.get("GPU") else opts.tensor_parallel_size
        have_cpu, have_gpu = resources.get("CPU", 0), resources.get("GPU", 0)
        if have_cpu < n or have_gpu < n * gpus:
            raise ModelLoadError(
                f"--data-parallel-size {n} needs {n} CPU(s)"
                + (f" and {n * gpus} GPU(s)" if gpus else "")
                + f" in the Ray cluster; it has {have_cpu:g} CPU(s) and {have_gpu:g} GPU(s)",
                field="--data-parallel-size",
            )
        actor = ray.remote(EngineActor).options(
            num_cpus=1, num_gpus=gpus, scheduling_strategy="SPREAD", max_restarts=0
        )
        self.handles = [actor.remote() for _ in range(n)]
        self.served = [0] * n
        self.info = [{} for _ in range(n)]
        try:
            self.places = ray.get([h.where.remote() for h in self.handles], timeout=PLACE_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            raise ModelLoadError(
                f"Ray placed fewer than {n} engines in {PLACE_TIMEOUT_S:.0f} s (cluster: "
                f"{have_cpu:g} CPU(s), {have_gpu:g} GPU(s))",
                field="--data-parallel-size",
            ) from None
        per_node: dict[str, int] = {}
        for place in self.places:
            per_node[place["node"]] = per_node.get(place["node"], 0) + 1
        derive = opts.gpu_memory_utilization is None
        calls = [
            h.start.remote(kwargs, per_node[place["node"]], derive)
            for h, place in zip(self.handles, self.places, strict=True)
        ]
        try:
            started = ray.get(calls, timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            raise ModelLoadError(
                f"{n} vLLM engines did not start in {START_TIMEOUT_S:.0f} s", field="--model"
            ) from None
        except ray.exceptions.RayError as exc:
            cause = getattr(exc, "cause", None) or exc
            raise ModelLoadError(
                f"vLLM cannot start {kwargs['model']} in a Ray actor: "
                f"{' '.join(str(cause).split())[:500]}",
                field="--model",
            ) from None
        for rank, (place, info) in enumerate(zip(self.places, started, strict=True)):
            self.info[rank] = {"rank": rank, **place, **info}

    def dtype(self) -> str:
        return str(self.info[0]["dtype"])

    # -- calls -----------------------------------------------------------------------

    def alive(self) -> list[int]:
        return [rank for rank in range(len(self.handles)) if rank not in self.failed]

    def run(
        self,
        method: str,
        items: list[Any],
        lora: Lora,
        on_done: Callable[[list[int], list[Any]], None] | None = None,
    ) -> list[Any]:
        """`method` on every item, dealt round-robin between the living engines; each
        engine's answers go to `on_done(positions, values)` as it finishes; a failed
        engine's share is dealt again to the others."""
        import ray

        out: list[Any] = [None] * len(items)
        pending: dict[Any, tuple[int, list[int], float]] = {}

        def deal(positions: list[int]) -> None:
            ranks = self.alive()
            if not ranks:
                raise self._all_failed()
            for k, rank in enumerate(ranks):
                share = positions[k :: len(ranks)]
                if share:
                    call = getattr(self.handles[rank], method)
                    ref = call.remote([items[i] for i in share], lora)
                    pending[ref] = (rank, share, time.monotonic())

        deal(list(range(len(items))))
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
            if not ready:
                now = time.monotonic()
                for ref, (rank, share, since) in list(pending.items()):
                    if now - since > CALL_TIMEOUT_S:
                        del pending[ref]
                        self._fail(rank, f"no answer in {CALL_TIMEOUT_S:.0f} s", len(share))
                        ray.kill(self.handles[rank], no_restart=True)
                        deal(share)
                continue
            ref = ready[0]
            rank, share, _ = pending.pop(ref)
            try:
                values = ray.get(ref, timeout=POLL_S)
            except engine_gone(ray) as exc:
                self._fail(rank, _reason(exc), len(share))
                deal(share)
                continue
            except ray.exceptions.RayTaskError as exc:  # the call itself raised: as here
                raise exc.as_instanceof_cause() from None
            self.served[rank] += len(share)
            for i, value in zip(share, values, strict=True):
                out[i] = value
            if on_done is not None:
                on_done(share, list(values))
        return out

    def _fail(self, rank: int, reason: str, unfinished: int) -> None:
        if rank in self.failed:
            return
        self.failed[rank] = reason
        left = self.alive()
        where = self._where(rank)
        then = (
            f"its {unfinished} unfinished prompt(s) go to engine(s) {', '.join(map(str, left))}"
            if left
            else "no engine is left"
        )
        print(
            f"warning: vLLM engine {rank} (Ray node {where}) failed: {reason}; {then}",
            file=sys.stderr,
            flush=True,
        )

    def _where(self, rank: int) -> str:
        place = self.places[rank] if rank < len(self.places) else {}
        return f"{place.get('ip', '?')} {str(place.get('node', '?'))[:8]}"

    def _all_failed(self) -> ModelLoadError:
        names = "; ".join(
            f"engine {rank} (Ray node {self._where(rank)}): {why}"
            for rank, why in sorted(self.failed.items())
        )
        return ModelLoadError(
            f"every data-parallel vLLM engine failed ({names}); finished answers are "
            "cached: the same command asks only the rest",
            field="--data-parallel-size",
        )

    # -- record and stop -------------------------------------------------------------

    def record(self) -> dict[str, Any]:
        engines = []
        for rank in range(len(self.handles)):
            info = dict(self.info[rank]) or {"rank": rank}
            info.pop("pid", None)
            info["prompts"] = self.served[rank]
            if rank in self.failed:
                info["failed"] = self.failed[rank]
            engines.append(info)
        return {
            "data_parallel_size": len(self.handles),
            "dealt": "round-robin within each call between the living engines; a failed "
            "engine's unfinished prompts dealt again to the others",
            "engines": engines,
        }

    def close(self) -> None:
        """Each engine shut down (bounded), its actor killed, and a Ray instance this
        run started stopped."""
        try:
            import ray
        except ImportError:
            return
        if not ray.is_initialized():
            return
        alive = [self.handles[r] for r in self.alive()]
        if alive:
            try:
                ray.get([h.shutdown.remote() for h in alive], timeout=STOP_TIMEOUT_S)
            except ray.exceptions.RayError:
                pass  # killed below either way
        for handle in self.handles:
            try:
                ray.kill(handle, no_restart=True)
            except (ray.exceptions.RayError, ValueError):
                pass
        self.handles = []
        if self.started_ray:
            ray.shutdown()


def engine_gone(ray: Any) -> tuple[type[BaseException], ...]:
    """What Ray raises for a call whose engine is gone (its actor, worker or node)."""
    errors = ray.exceptions
    return (errors.RayActorError, errors.NodeDiedError, errors.WorkerCrashedError,
            errors.ObjectLostError)  # fmt: skip


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    first = text.split(". ")[0] if text else type(exc).__name__
    return f"{type(exc).__name__}: {first[:200]}"

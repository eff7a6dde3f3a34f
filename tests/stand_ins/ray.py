"""A stand-in for the part of `ray`'s core API hakari uses (init, actors with options,
wait, get, kill, cluster resources, the runtime context), for what the CPU test machine
cannot show: a cluster with GPUs. Actors run in this process, one call at a time, and
every call is recorded in CALLS. The real Ray (the vLLM venv) runs the data-parallel
and multi-node tests: tests/e2e/test_vllm_ray.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

CALLS: list[tuple[str, Any]] = []
RESOURCES = {"CPU": 16.0, "GPU": 8.0}  # what cluster_resources() reports
_initialized = False


class RayError(Exception):
    pass


class GetTimeoutError(RayError, TimeoutError):
    pass


class RayActorError(RayError):
    pass


class RayTaskError(RayError):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause

    def as_instanceof_cause(self) -> BaseException:
        return self.cause


exceptions = SimpleNamespace(
    RayError=RayError,
    GetTimeoutError=GetTimeoutError,
    RayActorError=RayActorError,
    RayTaskError=RayTaskError,
    NodeDiedError=type("NodeDiedError", (RayError,), {}),
    WorkerCrashedError=type("WorkerCrashedError", (RayError,), {}),
    ObjectLostError=type("ObjectLostError", (RayError,), {}),
)
util = SimpleNamespace(get_node_ip_address=lambda: "127.0.0.1")


def is_initialized() -> bool:
    return _initialized


def init(address: str | None = None, **kwargs: Any) -> None:
    global _initialized
    _initialized = True
    CALLS.append(("init", address))


def shutdown() -> None:
    global _initialized
    _initialized = False
    CALLS.append(("shutdown", None))


def cluster_resources() -> dict[str, float]:
    return dict(RESOURCES)


def get_runtime_context() -> Any:
    return SimpleNamespace(get_node_id=lambda: "node-0")


class _Ref:
    def __init__(self, fn: Any, args: tuple[Any, ...]) -> None:
        try:
            self.value, self.error = fn(*args), None
        except RayError as exc:  # the actor is gone: as Ray raises it
            self.value, self.error = None, exc
        except Exception as exc:  # the call raised: wrapped, raised at get(), as Ray does
            self.value, self.error = None, RayTaskError(exc)


class _Method:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> _Ref:
        return _Ref(self.fn, args)


class _Handle:
    def __init__(self, instance: Any) -> None:
        self._instance = instance

    def __getattr__(self, name: str) -> _Method:
        return _Method(getattr(self._instance, name))


class _ActorClass:
    def __init__(self, cls: type, options: dict[str, Any] | None = None) -> None:
        self.cls = cls
        self.opts = options or {}

    def options(self, **options: Any) -> _ActorClass:
        return _ActorClass(self.cls, options)

    def remote(self, *args: Any, **kwargs: Any) -> _Handle:
        CALLS.append(("actor", (self.cls.__name__, self.opts)))
        return _Handle(self.cls(*args, **kwargs))


def remote(cls: type) -> _ActorClass:
    return _ActorClass(cls)


def _value(ref: _Ref) -> Any:
    if ref.error is not None:
        raise ref.error
    return ref.value


def get(refs: Any, timeout: float | None = None) -> Any:
    if isinstance(refs, list):
        return [_value(r) for r in refs]
    return _value(refs)


def wait(refs: list[_Ref], num_returns: int = 1, timeout: float | None = None) -> Any:
    return refs[:num_returns], refs[num_returns:]


def kill(actor: Any, no_restart: bool = True) -> None:
    CALLS.append(("kill", actor))

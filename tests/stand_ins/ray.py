"""A stand-in for `ray`'s core API (init, remote actors, get, kill): actors run in this
process, calls are recorded in CALLS."""

from __future__ import annotations

from typing import Any

CALLS: list[tuple[str, Any]] = []
_initialized = False


def is_initialized() -> bool:
    return _initialized


def init(address: str | None = None, **kwargs: Any) -> None:
    global _initialized
    _initialized = True
    CALLS.append(("init", address))


class _Ref:
    def __init__(self, value: Any) -> None:
        self.value = value


class _Method:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> _Ref:
        return _Ref(self.fn(*args))


class _Handle:
    def __init__(self, instance: Any) -> None:
        self._instance = instance

    def __getattr__(self, name: str) -> _Method:
        return _Method(getattr(self._instance, name))


class _ActorClass:
    def __init__(self, cls: type) -> None:
        self.cls = cls

    def remote(self, *args: Any, **kwargs: Any) -> _Handle:
        CALLS.append(("actor", self.cls.__name__))
        return _Handle(self.cls(*args, **kwargs))


def remote(cls: type) -> _ActorClass:
    return _ActorClass(cls)


def get(refs: Any) -> Any:
    if isinstance(refs, list):
        return [r.value for r in refs]
    return refs.value


def kill(actor: Any) -> None:
    CALLS.append(("kill", actor))

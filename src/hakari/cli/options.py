"""Options that several commands share, declared once (one help text each), and the
option groups of `hakari run`.

A group is a frozen dataclass whose fields are typer options (`Annotated[type,
typer.Option(...)]` with their defaults); `grouped` turns a command whose parameters
are typed with such groups into the flat command typer sees, and hands the command each
group as one record. So `hakari run` keeps every option and default while its Python
signature has ten parameters. This module imports typer only (`hakari --help` stays fast).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import typer

CacheDirOption = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Cache folder: model answers and converted packaged models (default: "
        "$HAKARI_CACHE_DIR, else the user cache).",
    ),
]
NoCacheOption = Annotated[
    bool, typer.Option("--no-cache", help="Bypass the response cache (ask the model again).")
]
DataDirOption = Annotated[
    Path | None, typer.Option("--data-dir", help="Folder with local copies of task data.")
]
DeviceOption = Annotated[str, typer.Option("--device", help="cpu, cuda or auto.")]

T = TypeVar("T")


def option_group(cls: type[T]) -> type[T]:
    """Mark a class of typer options as a group `grouped` expands (a frozen dataclass)."""
    group = dataclasses.dataclass(frozen=True)(cls)
    group.__option_group__ = True  # type: ignore[attr-defined]
    return group


def grouped(command: Callable[..., Any]) -> Callable[..., Any]:
    """`command` with each parameter typed by an `option_group` expanded into the group's
    options (for typer), and called with the group's record."""
    hints = get_type_hints(command, include_extras=True)
    flat: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, list[str]]] = {}
    for param in inspect.signature(command).parameters.values():
        kind = hints.get(param.name)
        if not getattr(kind, "__option_group__", False):
            flat.append(param.replace(annotation=hints[param.name], kind=param.KEYWORD_ONLY))
            continue
        assert isinstance(kind, type)
        own = get_type_hints(kind, include_extras=True)
        names = [f.name for f in dataclasses.fields(kind)]
        groups[param.name] = (kind, names)
        flat += [
            inspect.Parameter(f.name, param.KEYWORD_ONLY, default=f.default, annotation=own[f.name])
            for f in dataclasses.fields(kind)
        ]

    @functools.wraps(command)
    def expanded(**values: Any) -> Any:
        for name, (kind, names) in groups.items():
            values[name] = kind(**{n: values.pop(n) for n in names})
        return command(**values)

    expanded.__signature__ = inspect.Signature(flat)  # type: ignore[attr-defined]
    expanded.__annotations__ = {p.name: p.annotation for p in flat}
    return expanded

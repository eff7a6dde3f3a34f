"""MkDocs hooks of the documentation site (mkdocs.yml): the reference pages are generated
at build time from the code, never written twice, and a page left out of the nav is
still reachable.

- `reference/cli.md`: `hakari ... --help` of every command and group, rendered from the
  Typer app itself (the text a user sees in a terminal).
- `reference/results-json.md`: every record of results.json, field by field, from the
  pydantic records (`hakari.results.EvalResults` and the records it holds): the field's
  JSON type and its attribute docstring.
- Pages under docs/ that the nav does not list (a page added on another branch) go into
  a "More pages" section instead of being dropped.

Also importable on its own (`render_cli()`, `render_results_json()`), which the tests do.
"""

from __future__ import annotations

import types
import typing
from collections import abc
from pathlib import Path
from typing import Any

GENERATED = {
    "reference/cli.md": "render_cli",
    "reference/results-json.md": "render_results_json",
}
HELP_WIDTH = "100"


def render_cli() -> str:
    """The help text of `hakari` and of every command under it, as one Markdown page."""
    import typer
    from typer.testing import CliRunner

    from hakari.cli import app

    root = typer.main.get_command(app)
    lines = [
        "# Command line reference",
        "",
        "Generated from the command line itself at every build of this site: each section",
        "is what `hakari ... --help` prints. How to use the commands: the [guide](../running.md).",
        "",
    ]
    env = {"COLUMNS": HELP_WIDTH, "NO_COLOR": "1", "TERM": "dumb"}
    for path in _command_paths(root, ()):
        result = CliRunner().invoke(app, [*path, "--help"], env=env, prog_name="hakari")
        if result.exit_code != 0:
            raise RuntimeError(f"hakari {' '.join(path)} --help failed: {result.output}")
        text = "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines())
        level = "#" * min(len(path) + 1, 4)
        lines += [f"{level} hakari {' '.join(path)}".rstrip(), "", "```text", text, "```", ""]
    return "\n".join(lines)


def _command_paths(command: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every command path under `command`, the group before its commands, in help order."""
    paths = [path]
    for name in getattr(command, "commands", {}):
        sub = command.commands[name]
        if getattr(sub, "hidden", False):
            continue
        paths += _command_paths(sub, (*path, name))
    return paths


def render_results_json() -> str:
    """Every record of results.json with its fields' JSON types and docstrings."""
    from hakari.results import EvalResults

    records: list[type] = []
    _collect(EvalResults, records)
    lines = [
        "# results.json reference",
        "",
        "Generated from the typed records (`hakari.results` and the statistics records they",
        "hold) at every build of this site: each table lists a record's keys in the order they",
        "are written, the JSON type, and the field's documentation. Reading is strict (a",
        "number written as a string is an error); keys this version does not know are kept.",
        "In Python, `hakari.evaluate(...)` returns the same data as an `EvalResults`: each",
        "key below is an attribute (`results.models[name].tasks[task].decodings[d].aggregate`).",
        "",
    ]
    for record in records:
        lines += [f"## {record.__name__}", "", _doc(record), ""]
        lines += ["| key | type | meaning |", "|---|---|---|"]
        for name, field in record.model_fields.items():  # type: ignore[attr-defined]
            key = field.alias or name
            meaning = " ".join((field.description or "").split()).replace("|", "\\|")
            lines.append(f"| `{key}` | {_json_type(field.annotation)} | {meaning} |")
        lines.append("")
    return "\n".join(lines)


def _collect(record: type, seen: list[type]) -> None:
    """`record` and every record its fields hold, depth first, each once."""
    if record in seen:
        return
    seen.append(record)
    for field in record.model_fields.values():  # type: ignore[attr-defined]
        for inner in _records_in(field.annotation):
            _collect(inner, seen)


def _records_in(annotation: Any) -> list[type]:
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [r for arg in typing.get_args(annotation) for r in _records_in(arg)]


def _json_type(annotation: Any) -> str:
    """An annotation in JSON's words: object of, array of, number, string, a record link."""
    from pydantic import BaseModel

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_json_type(a) for a in args)
    if origin is typing.Literal:
        return " or ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args)
    if origin in (dict, abc.Mapping):
        return f"object of {_json_type(args[1]) if args else 'any'}"
    if origin in (list, tuple, abc.Sequence):
        return f"array of {_json_type(args[0]) if args else 'any'}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    if annotation in simple:
        return simple[annotation]
    return "any"


def _doc(record: type) -> str:
    doc = (record.__doc__ or "").strip()
    return " ".join(doc.split("\n\n")[0].split())


# --- MkDocs events -------------------------------------------------------------------------


def on_config(config: Any) -> Any:
    """Adds the pages under docs/ that the nav leaves out to a "More pages" section."""
    listed = set(_nav_pages(config.nav or []))
    docs = Path(config.docs_dir)
    extra = sorted(
        p.relative_to(docs).as_posix()
        for p in docs.rglob("*.md")
        if p.relative_to(docs).as_posix() not in listed
    )
    if extra and config.nav is not None:
        config.nav.append({"More pages": extra})
    return config


def _nav_pages(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in _nav_pages(v)]
    if isinstance(nav, list):
        return [p for v in nav for p in _nav_pages(v)]
    return []


def on_files(files: Any, config: Any) -> Any:
    """Adds the generated reference pages (see the module docstring)."""
    from mkdocs.structure.files import File

    for uri, renderer in GENERATED.items():
        content = globals()[renderer]()
        files.append(File.generated(config, uri, content=content))
    return files

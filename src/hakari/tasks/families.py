"""Task families: one task file for many subjects (JMMLU's 53, MMLU's 57).

A family file is a task file with a `family:` block listing its members; `{member}` in
its `data:` section and description is replaced by each member's name, and a member
task is named `<family>-<member>`. `--tasks jmmlu` runs every member, `--tasks
jmmlu:marketing,jmmlu:nutrition` the ones named. Each member is an ordinary task; what a
family adds is the summary over its members (`runner/families.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from hakari.errors import HakariInputError
from hakari.tasks.loader import Task, load_task, read_task_file, validated_spec

FAMILY_FOLDER = ("hakari.tasks.builtin", "families")
TASK_LIST = "_task_list"  # marks the mapping of a family of task files


def builtin_family_paths() -> dict[str, Path]:
    root = resources.files(FAMILY_FOLDER[0]) / FAMILY_FOLDER[1]
    paths = {
        e.name.removesuffix(".yaml"): Path(str(e))
        for e in root.iterdir()
        if e.name.endswith(".yaml")
    }
    return dict(sorted(paths.items()))


def family_members(path: Path) -> tuple[dict[str, Any], list[str]]:
    """A family file's mapping (without `family:`) and its member names (for a family of
    task files, `tasks:`, the mapping holds only its name)."""
    raw = read_task_file(path)
    family = raw.pop("family", None)
    if isinstance(family, dict) and "tasks" in family:
        raw = {k: raw[k] for k in ("name", "language", "description", "leaderboard") if k in raw}
        raw[TASK_LIST] = True
        family = {"members": family["tasks"]}
    members = family.get("members") if isinstance(family, dict) else None
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        raise HakariInputError(
            "`family.members` must be a list of names", file=str(path), field="family"
        )
    return raw, members


def load_tasks(names: Sequence[str | Path]) -> list[Task]:
    """Tasks by built-in name, YAML path, family name (`jmmlu`: every member) or family
    members (`jmmlu:marketing`), in the order given."""
    out: list[Task] = []
    families = builtin_family_paths()
    for name in names:
        text = str(name)
        family, _, member = text.partition(":")
        path = families.get(family) or _family_file(family)
        if path is None:
            out.append(load_task(name))
            continue
        raw, members = family_members(path)
        if ":" in text and not member.strip():
            raise HakariInputError(
                f"{text!r} names no subject: write {family} for all {len(members)} subjects "
                f"or {family}:SUBJECT",
                field="--tasks",
            )
        for m in [member.strip()] if member else members:
            if m not in members:
                raise HakariInputError(
                    f"unknown subject {m!r} of {family} (subjects: {', '.join(members)})",
                    field="--tasks",
                )
            out.append(member_task(path, raw, m))
    return out


def _family_file(name: str) -> Path | None:
    candidate = Path(name).expanduser()
    if candidate.suffix not in (".yaml", ".yml") or not candidate.is_file():
        return None
    raw = read_task_file(candidate)
    return candidate if "family" in raw else None


def member_task(path: Path, raw: dict[str, Any], member: str) -> Task:
    if raw.get(TASK_LIST):
        return replace(load_task(member), family=str(raw.get("name", path.stem)))
    data = dict(raw)
    family = str(data.get("name", path.stem))
    data["name"] = f"{family}-{member}"
    data["data"] = _substitute(data.get("data"), member)
    data["description"] = _substitute(data.get("description", ""), member)
    return replace(Task(spec=validated_spec(data, path), path=path.resolve()), family=family)


def _substitute(value: Any, member: str) -> Any:
    if isinstance(value, str):
        return value.replace("{member}", member)
    if isinstance(value, dict):
        return {k: _substitute(v, member) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, member) for v in value]
    return value


def describe_family(path: Path) -> dict[str, Any]:
    raw, members = family_members(path)
    return {"name": raw.get("name", path.stem), "members": members, "path": str(path)}

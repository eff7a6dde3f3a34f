"""`hakari tasks list|show|export`: the built-in tasks, one task's templates, and
templates × instances as training data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from hakari.cli.common import console, fail, split_csv
from hakari.errors import HakariInputError

if TYPE_CHECKING:
    from hakari.tasks.loader import Task

app = typer.Typer(help="List, show and export tasks.", no_args_is_help=True)


@app.command("list")
def tasks_list(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the built-in tasks."""
    from hakari.tasks.families import TASK_LIST, builtin_family_paths, family_members
    from hakari.tasks.loader import builtin_task_paths, load_task, task_summary

    summaries = [task_summary(load_task(path)) for path in builtin_task_paths().values()]
    for name, path in builtin_family_paths().items():
        raw, members = family_members(path)
        own_files = bool(raw.get(TASK_LIST))  # a family of task files: each its own
        summaries.append(
            {
                "name": name,
                "language": raw.get("language", ""),
                "n_templates": "per task" if own_files else "space",
                "answer_type": "per task" if own_files else "choice",
                "metrics": list(raw.get("metrics", [])),
                "description": raw.get("description", "").replace("{member}", "*"),
                "path": str(path),
                "members": members,
            }
        )
    if as_json:
        print(json.dumps(summaries, ensure_ascii=False, indent=2))
        return
    table = Table(title="built-in tasks", title_justify="left")
    for col in ("name", "language", "templates", "answer", "metrics"):
        table.add_column(col)
    for s in summaries:
        table.add_row(
            s["name"] + (f" ({len(s['members'])} subjects)" if "members" in s else ""),
            s["language"],
            str(s["n_templates"]),
            s["answer_type"],
            ", ".join(s["metrics"]),
        )
    console.print(table)


def _one_task(name: str, wanted: str | list[str], data_dir: Path | None, verb: str) -> Task:
    """The task `name` names (a family's member, not the family), its space expanded."""
    from hakari.tasks.families import load_tasks
    from hakari.tasks.space import expand_task

    loaded = load_tasks([name])
    if len(loaded) != 1:
        raise HakariInputError(
            f"{name} is a family of {len(loaded)} tasks: {verb} one as {name}:MEMBER",
            field="name",
        )
    return expand_task(loaded[0], wanted, data_dir=data_dir)


@app.command("show")
def tasks_show(
    name: Annotated[str, typer.Argument(help="Task name, FAMILY:MEMBER or YAML path")],
    templates: Annotated[
        str, typer.Option("--templates", help="'all', template ids, space:N or space:all.")
    ] = "all",
    data_dir: Annotated[Path | None, typer.Option("--data-dir")] = None,
) -> None:
    """Show a task's templates (with their levels, for a space), regexes and fallback."""
    from hakari.tasks.prompts import select_templates

    wanted = "all" if templates == "all" else split_csv(templates)
    try:
        task = _one_task(name, wanted, data_dir, "show")
        shown = select_templates(task.spec, wanted)
    except HakariInputError as exc:
        fail(exc)
    spec = task.spec
    console.print(Text.assemble((spec.name, "bold"), f" ({spec.language}) — {spec.description}"))
    console.print(f"file: {task.path}")
    console.print(
        f"answer type: {spec.answer_type}; labels: {spec.labels}; fallback: "
        f"{spec.fallback.kind} {spec.fallback_answer()!r}; metrics: {', '.join(spec.metrics)}"
    )
    if spec.choices is not None:
        console.print(
            f"multiple choice: {spec.choices.k} choices per instance (uniform guess "
            f"{1 / spec.choices.k:.3f}); gold from {spec.choices.gold_field!r} as "
            f"{spec.choices.gold}"
        )
    table = Table(show_lines=True)
    table.add_column("id")
    table.add_column("prompt")
    table.add_column("regex")
    table.add_column("answers")
    for t in shown:
        answers = ", ".join(f"{k}→{v}" for k, v in (t.answers or {}).items())
        levels = "".join(f"\n{d}={lvl}" for d, lvl in (t.levels or {}).items())
        table.add_row(Text(t.id + levels), Text(t.prompt), Text(t.regex), Text(answers))
    console.print(table)
    if spec.space is not None:
        dims = ", ".join(f"{d} ({len(v)})" for d, v in spec.space.dimensions.items())
        console.print(f"space: {spec.space.size():,} templates; dimensions: {dims}")


@app.command("export")
def tasks_export(
    name: Annotated[str, typer.Argument(help="Task name or YAML path")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output JSONL file")],
    split: Annotated[str, typer.Option("--split")] = "train",
    templates: Annotated[str, typer.Option("--templates")] = "all",
    data_dir: Annotated[Path | None, typer.Option("--data-dir")] = None,
) -> None:
    """Write templates × instances (prompt, target) as JSONL, for fine-tuning."""
    from hakari.tasks.export import export_training_data

    wanted = "all" if templates == "all" else split_csv(templates)
    try:
        task = _one_task(name, wanted, data_dir, "export")
        n = export_training_data(
            task,
            split=split,
            templates=wanted,
            output=output,
            data_dir=data_dir,
        )
    except HakariInputError as exc:
        fail(exc)
    except OSError as exc:
        fail(
            HakariInputError(
                f"cannot write: {exc.strerror or exc}", file=str(output), field="--output"
            )
        )
    console.print(f"wrote {n} rows to {output}")

"""Training data export: the Cartesian product of templates x training instances.

Each JSONL row is `{"task", "template_id", "index", "prompt", "target"}`: the prompt as
the evaluation renders it and the target written in that template's answer format, so
that a model fine-tuned on it (paper §3.2, Table 1) answers the way the template's regex
expects. Rows are streamed: instance by instance, every selected template for each.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hakari._util.atomic import atomic_open, check_output, json_line
from hakari._util.regex import RegexError, compile_regex
from hakari.errors import HakariInputError
from hakari.tasks.data import iter_rows, resolve_split_file
from hakari.tasks.loader import Task, load_task
from hakari.tasks.prompts import RenderedPrompt, render, select_templates
from hakari.tasks.spec import LabelValue, TaskSpec, Template


def export_training_data(
    task: Task | str | Path,
    split: str = "train",
    templates: str | Sequence[str] = "all",
    output: Path | str = Path("train.jsonl"),
    data_dir: Path | None = None,
) -> int:
    """Write the template x instance rows of `split` to `output` (JSON Lines); return how
    many rows were written. Every target fullmatches its template's regex, or a
    `HakariInputError` names the instance and the template."""
    loaded = task if isinstance(task, Task) else load_task(task)
    out = check_output(output, "--output", inputs=task_files(loaded, data_dir))
    chosen = select_templates(loaded.spec, templates)
    count = 0
    with atomic_open(out) as fh:  # no half-written file on an error
        for row in iter_training_rows(loaded, chosen, split=split, data_dir=data_dir):
            fh.write(json_line(row))
            count += 1
        if count == 0:
            raise HakariInputError(f"split {split!r} has no instances", file=str(loaded.path))
    return count


def task_files(task: Task, data_dir: Path | None) -> list[Path]:
    """The task file and its local data files: what an export must not write over."""
    local = (
        resolve_split_file(split, data_dir=data_dir, task_dir=task.task_dir)
        for split in task.spec.data.splits.values()
    )
    return [task.path, *(path for path in local if path is not None)]


def iter_training_rows(
    task: Task, templates: Sequence[Template], *, split: str, data_dir: Path | None
) -> Iterator[dict[str, Any]]:
    rows = iter_rows(task.spec, split=split, data_dir=data_dir, task_dir=task.task_dir)
    for index, row in enumerate(rows):
        yield from instance_training_rows(task, templates, row, index)


def instance_training_rows(
    task: Task, templates: Sequence[Template], row: dict[str, Any], index: int
) -> Iterator[dict[str, Any]]:
    """The rows of one instance (`index` is its position in the split), one per template;
    `hakari finetune` builds its examples from these."""
    for template in templates:
        prompt = _render(task, template, row, index)
        yield {
            "task": task.spec.name,
            "template_id": template.id,
            "index": index,
            "prompt": prompt.text,
            "target": training_target(task.spec, prompt),
        }


def _render(task: Task, template: Template, row: dict[str, Any], index: int) -> RenderedPrompt:
    try:
        return render(task.spec, template, row, index)
    except KeyError as exc:
        raise HakariInputError(
            f"instance {index} has no field {exc.args[0]!r} (fields: {', '.join(sorted(row))})",
            file=str(task.path),
            template=template.id,
        ) from None
    except TypeError as exc:  # a mapping or list where the prompt wants text
        raise HakariInputError(
            f"instance {index}: {exc}", file=str(task.path), template=template.id, field="prompt"
        ) from None
    except ValueError as exc:  # a gold outside the label set
        raise HakariInputError(
            f"instance {index}: {exc}", file=str(task.path), template=template.id, field="labels"
        ) from None


def training_target(spec: TaskSpec, prompt: RenderedPrompt) -> str:
    """The gold answer written as the template asks for it; it fullmatches the regex."""
    if spec.answer_type == "label":
        target = _label_key(prompt.answers or {}, prompt.gold)
    elif spec.answer_type == "number":
        target = format_score(float(prompt.gold), prompt.regex)
    else:
        target = _first_matching_answer(prompt.gold, prompt.regex)
    if target is None or not _fullmatches(prompt.regex, target):
        raise HakariInputError(
            f"instance {prompt.index}: gold {prompt.gold!r} cannot be written in the answer "
            f"format of this template (regex {prompt.regex!r})",
            template=prompt.template_id,
            field="regex",
        )
    return target


def _label_key(answers: dict[str, LabelValue], gold: LabelValue) -> str | None:
    """The first answer text that maps to the gold label (the inverse of `answers`)."""
    for text, label in answers.items():
        if str(label) == str(gold):
            return text
    return None


def format_score(value: float, regex: str) -> str | None:
    """The score as the shortest of one decimal, two decimals or an integer that the regex
    fullmatches and that keeps the value (rounded to the nearest allowed form otherwise)."""
    exact = [f"{value:.1f}", f"{value:.2f}", f"{value:.0f}"]
    for text in exact:
        if float(text) == value and _fullmatches(regex, text):
            return text
    for text in (f"{value:.2f}", f"{value:.1f}", f"{value:.0f}"):
        if _fullmatches(regex, text):
            return text
    return None


def _first_matching_answer(golds: list[str], regex: str) -> str | None:
    """The first gold answer (SQuAD-style lists), or the first one the regex accepts."""
    for text in golds:
        if _fullmatches(regex, text):
            return text
    return golds[0] if golds else None


def _fullmatches(regex: str, text: str) -> bool:
    """The regex (filled for one instance) accepts all of `text` (linear-time matcher)."""
    try:
        return compile_regex(regex).fullmatch(text)
    except RegexError as exc:
        raise HakariInputError(f"regex {regex!r} cannot be used: {exc}", field="regex") from None

"""Template × instance expansion, streamed.

A rendered prompt carries everything later stages need: the text, the instance's
regex (with `{{field}}` references filled and escaped) and answer map, the gold, and for
a label task where a greedy answer is decided (`decided_stop`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hakari._util.regex import escape as regex_escape
from hakari.backends.base import StopAfter
from hakari.errors import HakariInputError
from hakari.tasks.data import Row, get_path
from hakari.tasks.extract import decided_answer_stop, gold_answer
from hakari.tasks.spacespec import parse_selection, selection_text
from hakari.tasks.spec import INSTANCE_REF, LabelValue, TaskSpec, Template


@dataclass(frozen=True)
class RenderedPrompt:
    template_id: str
    index: int  # the instance's position in the split
    text: str
    regex: str
    answers: dict[str, LabelValue] | None
    gold: Any
    max_new_tokens: int
    max_new_chars: int | None = None
    # label tasks: where a free answer's extracted label can no longer change (the
    # request's `stop_after`); None for other answer types
    decided_stop: StopAfter | None = None
    stop: tuple[str, ...] = ("\n",)  # a free answer's stop strings (`TaskSpec.greedy_stop`)
    prompt_format: str | None = None  # the template's own (a space's level), else None


class _FieldView(dict[str, Any]):
    """Lets `str.format_map` read dotted field mappings from a row."""

    def __init__(self, spec: TaskSpec, row: Row) -> None:
        super().__init__()
        self._spec = spec
        self._row = row

    def __missing__(self, key: str) -> Any:
        return field_text(self._spec, self._row, key)


def field_text(spec: TaskSpec, row: Row, name: str) -> str:
    """The value of field `name` as the text a prompt or regex shows. A mapping or list
    is refused (TypeError): its Python repr, `{'deep': ['x']}`, is no text to prompt with."""
    value = get_path(row, spec.field_path(name))
    if isinstance(value, dict | list | tuple):
        raise TypeError(
            f"field {name!r} is a {'mapping' if isinstance(value, dict) else 'list'}, "
            "not text (map a text field inside it with `fields:`)"
        )
    return str(value)


def _fill_refs(pattern: str, spec: TaskSpec, row: Row, *, escape: bool) -> str:
    def value(m: re.Match[str]) -> str:
        text = field_text(spec, row, m.group(1))
        return regex_escape(text) if escape else text

    return INSTANCE_REF.sub(value, pattern)


def render(spec: TaskSpec, template: Template, row: Row, index: int) -> RenderedPrompt:
    text = template.prompt.format_map(_FieldView(spec, row)) + spec.prompt_suffix
    regex = _fill_refs(template.regex, spec, row, escape=True)
    answers = None
    if template.answers is not None:
        answers = {_fill_refs(k, spec, row, escape=False): v for k, v in template.answers.items()}
    gold = gold_answer(spec, get_path(row, spec.field_path(spec.target)))
    return RenderedPrompt(
        template_id=template.id,
        index=index,
        text=text,
        regex=regex,
        answers=answers,
        gold=gold,
        max_new_tokens=spec.max_tokens_for(template),
        max_new_chars=spec.max_chars_for(template),
        decided_stop=decided_answer_stop(regex) if spec.answer_type == "label" else None,
        stop=spec.greedy_stop,
        prompt_format=template.prompt_format,
    )


def select_templates(spec: TaskSpec, wanted: str | Sequence[str] | None) -> list[Template]:
    """`all`/None → every template; `space:…` → the generated ones (`space.expand_task`
    put them in the spec); else the ids asked for, in task order."""
    if wanted is None or wanted == "all" or list(wanted) == ["all"]:
        return list(spec.templates)
    if parse_selection(wanted) is not None:
        generated = [t for t in spec.templates if t.levels is not None]
        if not generated:
            raise HakariInputError(
                f"task {spec.name} has no generated templates for --templates "
                f"{selection_text(wanted)} (a task with a `space:` expanded by "
                "hakari.tasks.space.expand_task)",
                field="--templates",
            )
        return generated
    ids = [wanted] if isinstance(wanted, str) else list(wanted)
    known = {t.id for t in spec.templates}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise HakariInputError(
            f"unknown template id(s) {', '.join(unknown)} for task {spec.name} "
            f"(known: {', '.join(sorted(known))})",
            field="--templates",
        )
    return [t for t in spec.templates if t.id in ids]


def iter_chunks(
    spec: TaskSpec, templates: Sequence[Template], rows: Iterable[Row], chunk_rows: int
) -> Iterator[list[RenderedPrompt]]:
    """Yield the prompts of `chunk_rows` instances at a time (every template for each),
    so memory stays flat however large the split."""
    return iter_numbered_chunks(spec, templates, enumerate(rows), chunk_rows)


def iter_numbered_chunks(
    spec: TaskSpec,
    templates: Sequence[Template],
    numbered_rows: Iterable[tuple[int, Row]],
    chunk_rows: int,
) -> Iterator[list[RenderedPrompt]]:
    """`iter_chunks` for rows that carry their position in the split (a `--sample`)."""
    chunk: list[RenderedPrompt] = []
    n_rows = 0
    for index, row in numbered_rows:
        chunk.extend(render(spec, t, row, index) for t in templates)
        n_rows += 1
        if n_rows == chunk_rows:
            yield chunk
            chunk, n_rows = [], 0
    if chunk:
        yield chunk

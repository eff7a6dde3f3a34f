"""Templates built from a task's prompt space (`space:`; the task format is in
`spacespec.py`, the kinds of level in `spacelevels.py`, which templates a run takes in
`spacesample.py`).

Each template is derived from its levels: the prompt (few-shot examples written into
it, in its layout), and for a multiple-choice task the answer regex (the enumerator's
symbols) and the answers map (symbol -> the original index of the choice it shows, so
the gold is remapped under every choice order); a generation task's templates take the
space's regex and show each example's gold text as its answer. Expansion happens here,
before the run: the runner, extraction, constrained decoding and log-likelihood see
ordinary templates. Generated ids can be named like hand-written ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hakari._util.regex import escape as regex_escape
from hakari.errors import HakariInputError
from hakari.tasks.choices import GOLD_FIELD, choice_field
from hakari.tasks.data import Row, get_path, iter_rows
from hakari.tasks.loader import Task, check_answer_keys
from hakari.tasks.prompts import select_templates
from hakari.tasks.spacelevels import (
    PROMPT_FORMAT_DIMENSION,
    ChoiceOrder,
    Enumerator,
    Layout,
    Level,
    Levels,
    TemplateParts,
)
from hakari.tasks.spacesample import check_template_count, select_levels
from hakari.tasks.spacespec import (
    SLOT,
    SpaceSelection,
    SpaceSpec,
    parse_selection,
    selection_text,
    slots_of,
)
from hakari.tasks.spec import LabelValue, TaskSpec, Template


def expand_task(
    task: Task,
    wanted: str | Sequence[str] | None,
    *,
    data_dir: Path | None = None,
    vary_format: bool = False,
) -> Task:
    """The task with the templates `wanted` asks for from its space put in place of its
    hand-written ones; a task without a space (or asked for hand-written ids) unchanged.
    `vary_format` (`--vary-prompt-format`): the space gets the dimension `prompt_format`
    (completion, chat) unless it has one, and only its templates are taken."""
    if vary_format:
        expanded = expand_task(_with_format_dimension(task), wanted, data_dir=data_dir)
        asked = select_templates(expanded.spec, wanted)
        hand_written = next((t.id for t in asked if t.levels is None), None)
        if hand_written is not None:
            raise HakariInputError(
                f"--vary-prompt-format varies a prompt space's templates; template "
                f"{hand_written} of task {task.name} is hand-written: ask for space:N, "
                "space:all or generated ids",
                file=str(task.path),
                field="--templates",
            )
        return expanded
    spec = task.spec
    space = spec.space
    check_template_count(
        len(spec.templates), task=task.name, file=str(task.path), field="templates"
    )
    selection = parse_selection(wanted)
    if space is None:
        if selection is not None:
            raise HakariInputError(
                f"task {spec.name} has no prompt space (--templates {selection_text(wanted)})",
                file=str(task.path),
                field="--templates",
            )
        return task
    check_space(task)
    ids = [wanted] if isinstance(wanted, str) else list(wanted or ["all"])
    kept: list[Template] = []
    where = {"task": task.name, "file": str(task.path)}
    if selection is not None:
        chosen = select_levels(space, selection, **where)
    elif ids == ["all"]:
        if spec.templates:
            return task
        chosen = select_levels(space, SpaceSelection(space.default_count(), None), **where)
    else:
        own = {t.id for t in spec.templates}
        chosen = [levels_of_id(space, i, task) for i in ids if i not in own]
        if not chosen:
            return task
        kept = [t for t in spec.templates if t.id in ids]
    return _with_templates(task, kept + build_templates(task, chosen, data_dir=data_dir))


def _with_format_dimension(task: Task) -> Task:
    space = task.spec.space
    if space is None:
        raise HakariInputError(
            f"--vary-prompt-format: task {task.name} has no prompt space (its templates are "
            "hand-written)",
            file=str(task.path),
            field="--vary-prompt-format",
        )
    if "prompt_format" in space.dimensions:  # the file's own
        return task
    dimensions = {**space.dimensions, "prompt_format": dict(PROMPT_FORMAT_DIMENSION)}
    wider = space.model_copy(update={"dimensions": dimensions})
    return replace(task, spec=task.spec.model_copy(update={"space": wider}))


def check_space(task: Task) -> None:
    """No two levels of a dimension do the same; for a multiple-choice task, every row
    has the same number of choices, every enumerator fits it and its answers are read
    back."""
    spec = task.spec
    assert spec.space is not None
    k = 0 if spec.choices is None else spec.choices.k
    if spec.choices is not None:
        _check_choices(task, k)
    for dim, levels in spec.space.dimensions.items():
        _check_levels_differ(task, dim, levels, k)


def _check_choices(task: Task, k: int) -> None:
    spec = task.spec
    assert spec.space is not None and spec.choices is not None
    if not spec.choices.fixed:
        raise HakariInputError(
            f"a space lists the same number of choices in every prompt; task {spec.name}'s "
            f"rows have {spec.choices.count_text()} (drop `choices.min_count`, or split the file)",
            file=str(task.path),
            field="choices.min_count",
        )
    for name, enum in spec.space.dimensions.get("enumerator", {}).items():
        assert isinstance(enum, Enumerator)
        if enum.for_count(k) is None:
            raise HakariInputError(
                f"enumerator {name!r} has {len(enum.symbols)} symbols, the task has {k} choices",
                file=str(task.path),
                field="space.dimensions.enumerator",
            )


def _check_levels_differ(task: Task, dim: str, levels: dict[str, Level], k: int) -> None:
    """Two levels of a dimension that do the same (`rotate0` and `given`, shots `3` and
    `03`, two texts alike) would make templates that are one prompt counted as two: the
    spread over templates would be wrong."""
    assert task.spec.space is not None
    seen: dict[object, str] = {}
    for name, level in levels.items():
        effect = level.effect(k, task.spec.space.seed)
        if effect in seen:
            given = f" with {k} choices" if isinstance(level, Enumerator | ChoiceOrder) else ""
            raise HakariInputError(
                f"levels {seen[effect]!r} and {name!r} of {dim} make the same prompts{given}: "
                "two templates would be one prompt counted twice; keep one",
                file=str(task.path),
                field=f"space.dimensions.{dim}",
            )
        seen[effect] = name


def levels_of_id(space: SpaceSpec, template_id: str, task: Task) -> Levels:
    parts = template_id.split(".")
    if space.is_levels(parts):
        return dict(zip(space.dimensions, parts, strict=True))
    raise HakariInputError(
        f"unknown template id {template_id!r} for task {task.name}: a generated id is one "
        f"level of each dimension joined by '.' ({'.'.join(space.dimensions)})",
        file=str(task.path),
        field="--templates",
    )


def _with_templates(task: Task, templates: list[Template]) -> Task:
    """The task with these templates (each validated when built; ids distinct: generated
    ids hold a '.', hand-written ones do not)."""
    return replace(task, spec=task.spec.model_copy(update={"templates": templates}))


# --- one template from its levels ------------------------------------------------------


def build_templates(
    task: Task, chosen: Sequence[Levels], *, data_dir: Path | None = None
) -> list[Template]:
    """The templates of these levels (each template's levels one item of `chosen`)."""
    space = task.spec.space
    assert space is not None
    n_shots = max((space.shots_of(levels) for levels in chosen), default=0)
    shots = _shot_rows(task, n_shots, data_dir)
    examples: dict[tuple[Any, ...], str] = {}  # templates that show the examples alike
    templates = [build_template(task, levels, shots, examples) for levels in chosen]
    _check_templates_differ(task, templates)
    check_answer_keys(task, templates, constrained=True)
    return templates


def _check_templates_differ(task: Task, templates: Sequence[Template]) -> None:
    """No two templates are the same prompt (same text, regex and answers): levels of
    different dimensions can still add up to the same text (an instruction ending in
    "Q: " and an empty question tag, against the reverse)."""
    seen: dict[tuple[Any, ...], str] = {}
    for t in templates:
        key = (t.prompt, t.regex, tuple((t.answers or {}).items()), t.prompt_format)
        if key in seen:
            raise HakariInputError(
                f"templates {seen[key]} and {t.id} are the same prompt: their levels add up "
                "to the same text; make the levels differ (else one prompt counts as two "
                "templates)",
                file=str(task.path),
                field="space",
            )
        seen[key] = t.id


def _shot_rows(task: Task, n: int, data_dir: Path | None) -> list[Row]:
    if n == 0:
        return []
    space = task.spec.space
    assert space is not None and space.shots_split is not None
    rows = list(
        iter_rows(
            task.spec,
            split=space.shots_split,
            data_dir=data_dir,
            task_dir=task.task_dir,
            limit=n,
            keep_shots=True,
        )
    )
    if len(rows) < n:
        raise HakariInputError(
            f"the shots split {space.shots_split!r} has {len(rows)} rows, a template asks "
            f"for {n} examples",
            file=str(task.path),
            field="space.shots_split",
        )
    return rows


@dataclass(frozen=True)
class _Answers:
    """How a template's block shows a question and what its examples answer: a choice
    task's choices under the template's enumerator and order, or a generation task's
    gold text."""

    key: tuple[Any, ...]  # what the examples' text depends on besides the layout
    regex: str
    answers: dict[str, LabelValue] | None
    block: Callable[[str, Sequence[str]], str]  # question, choice texts -> the block
    options: Callable[[Row | None], list[str]]  # a row's choice texts (None: placeholders)
    answer: Callable[[Row], str]  # an example row's answer as the prompt shows it


def build_template(
    task: Task,
    levels: Levels,
    shots: Sequence[Row],
    examples: dict[tuple[Any, ...], str] | None = None,
) -> Template:
    """The template of one level of every dimension (its id: the level names joined by
    '.'). `examples` keeps the few-shot text already written for other templates."""
    spec = task.spec
    space = spec.space
    assert space is not None
    parts = space.parts(levels)
    shown = _choice_answers(task, parts) if spec.choices is not None else _text_answers(task, parts)
    layout = parts.layout
    # what the examples' text depends on: the layout, its block's text slots, the answers
    block_texts = tuple(parts.texts.get(slot) for slot in slots_of(layout.block))
    key = (parts.shots, layout, block_texts, shown.key)
    if examples is None:
        examples = {}
    if key not in examples:
        rows = shots[: parts.shots]
        examples[key] = "".join(_example(task, row, shown, layout) for row in rows)
    question_block = shown.block("{" + space.question + "}", shown.options(None))
    prompt = _fill(layout.prefix, {**parts.texts, "shots": examples[key]}) + question_block
    try:
        return Template(
            id=".".join(levels.values()),
            prompt=prompt,
            regex=shown.regex,
            answers=shown.answers,
            levels=dict(levels),
            prompt_format=parts.prompt_format,
        )
    except ValidationError as exc:
        raise HakariInputError(
            f"levels {levels} make a template that does not parse: "
            + exc.errors()[0]["msg"].removeprefix("Value error, "),
            file=str(task.path),
            template=".".join(levels.values()),
            field="space",
        ) from None


def _choice_answers(task: Task, parts: TemplateParts) -> _Answers:
    """A choice task's block: the choices under the template's enumerator and order."""
    spec = task.spec
    assert spec.space is not None and spec.choices is not None
    k = spec.choices.k
    labels = spec.labels or list(range(k))
    enum = parts.enumerator
    symbols = enum.for_count(k)
    assert symbols is not None  # check_space
    order = parts.order.positions(k, spec.space.seed)

    def block(question: str, options: Sequence[str]) -> str:
        listed = parts.separator.join(
            f"{_literal(symbols[j])}{enum.delimiter}{options[order[j]]}" for j in range(k)
        )
        return _fill(parts.layout.block, {**parts.texts, "question": question, "choices": listed})

    def options(row: Row | None) -> list[str]:
        if row is None:
            return ["{" + choice_field(j) + "}" for j in range(k)]
        return [_literal(str(row[choice_field(j)])) for j in range(k)]

    def answer(row: Row) -> str:
        if GOLD_FIELD not in row:
            raise HakariInputError(
                "a few-shot example row has no readable choices or gold",
                file=str(task.path),
                field="space.shots_split",
            )
        return symbols[order.index(int(row[GOLD_FIELD]))]

    return _Answers(
        key=(parts.separator, enum, tuple(order)),
        regex=answer_regex(symbols),
        answers={symbols[j]: labels[order[j]] for j in range(k)},
        block=block,
        options=options,
        answer=answer,
    )


def _text_answers(task: Task, parts: TemplateParts) -> _Answers:
    """A generation task's block: the question alone; an example answers its gold text."""
    spec = task.spec
    assert spec.space is not None and spec.space.regex is not None

    def block(question: str, options: Sequence[str]) -> str:
        return _fill(parts.layout.block, {**parts.texts, "question": question})

    def answer(row: Row) -> str:
        gold = get_path(row, spec.field_path(spec.target))
        if isinstance(gold, list | tuple):  # several golds: the example shows the first
            gold = gold[0] if gold else None
        if gold is None or gold == "":
            raise HakariInputError(
                f"a few-shot example row has no answer (field {spec.target!r})",
                file=str(task.path),
                field="space.shots_split",
            )
        return str(gold)

    return _Answers((), spec.space.regex, None, block, lambda row: [], answer)


def _example(task: Task, row: Row, shown: _Answers, layout: Layout) -> str:
    """One worked example: the layout's block filled with the row, then its answer
    (the symbol of its gold under the template's enumerator and choice order, or its
    gold text), then the layout's example end (a blank line unless it says otherwise)."""
    spec = task.spec
    assert spec.space is not None
    answer = _literal(shown.answer(row))
    question = _literal(str(get_path(row, spec.field_path(spec.space.question))))
    text = shown.block(question, shown.options(row))
    return f"{text}{layout.example_joiner(text)}{answer}{layout.shot_end}"


@lru_cache(maxsize=64)
def answer_regex(symbols: tuple[str, ...]) -> str:
    """The regex accepting exactly the symbols: a class for single characters, else an
    alternation, longest first (`ii` before `i`)."""
    if all(len(s) == 1 for s in symbols):
        return "[" + "".join(regex_escape(s) for s in symbols) + "]"
    return "|".join(regex_escape(s) for s in sorted(symbols, key=len, reverse=True))


def _literal(text: str) -> str:
    """Data text inside a template prompt (a format string): braces doubled."""
    return text.replace("{", "{{").replace("}", "}}")


def _fill(layout: str, slots: dict[str, str]) -> str:
    return SLOT.sub(lambda m: slots.get(m.group(1), m.group(0)), layout)


def template_levels(spec: TaskSpec, template_ids: Iterable[str]) -> dict[str, Levels]:
    """The levels of the generated templates among `template_ids` (the one lookup of a
    template's levels; hand-written templates have none and are left out)."""
    by_id = _levels_index(spec.templates)
    return {tid: dict(by_id[tid]) for tid in template_ids if tid in by_id}


_INDEXES: dict[int, tuple[list[Template], dict[str, Levels]]] = {}
_KEPT_INDEXES = 16


def _levels_index(templates: list[Template]) -> dict[str, Levels]:
    """Template id -> levels of one task's templates, built once per list (callers ask
    template by template: a lookup each would cost O(T²) over a space's thousands). An
    entry holds its list, so its id cannot be reused while it is kept."""
    key = id(templates)
    if key not in _INDEXES:
        if len(_INDEXES) >= _KEPT_INDEXES:
            del _INDEXES[next(iter(_INDEXES))]
        index = {t.id: t.levels for t in templates if t.levels is not None}
        _INDEXES[key] = (templates, index)
    return _INDEXES[key][1]

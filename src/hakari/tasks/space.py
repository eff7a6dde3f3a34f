"""Templates built from a task's prompt space (`space:`; the task format is in
`spacespec.py`, the kinds of level in `spacelevels.py`, which templates a run takes in
`spacesample.py`).

Each template is derived from its levels: the prompt (few-shot examples written into
it), the answer regex (the enumerator's symbols) and the answers map (symbol -> the
original index of the choice it shows, so the gold is remapped under every choice
order). Expansion happens here, before the run: the runner, extraction, constrained
decoding and log-likelihood see ordinary templates. Generated ids can be named like
hand-written ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hakari._util.regex import escape as regex_escape
from hakari.errors import HakariInputError
from hakari.tasks.choices import GOLD_FIELD, choice_field
from hakari.tasks.data import Row, get_path, iter_rows
from hakari.tasks.loader import Task, check_answer_keys
from hakari.tasks.spacelevels import ChoiceOrder, Enumerator, Level, Levels
from hakari.tasks.spacesample import check_template_count, select_levels
from hakari.tasks.spacespec import (
    SLOT,
    SpaceSelection,
    SpaceSpec,
    parse_selection,
    selection_text,
    slots_of,
)
from hakari.tasks.spec import TaskSpec, Template


def expand_task(
    task: Task, wanted: str | Sequence[str] | None, *, data_dir: Path | None = None
) -> Task:
    """The task with the templates `wanted` asks for from its space put in place of its
    hand-written ones; a task without a space (or asked for hand-written ids) unchanged."""
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


def check_space(task: Task) -> None:
    """Every row has the same number of choices, every enumerator fits it and its
    answers are read back."""
    spec = task.spec
    assert spec.space is not None and spec.choices is not None
    k = spec.choices.k
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
    for dim, levels in spec.space.dimensions.items():
        _check_levels_differ(task, dim, levels, k)


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
        key = (t.prompt, t.regex, tuple((t.answers or {}).items()))
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


def build_template(
    task: Task,
    levels: Levels,
    shots: Sequence[Row],
    examples: dict[tuple[Any, ...], str] | None = None,
) -> Template:
    """The template of one level of every dimension (its id: the level names joined by
    '.'). `examples` keeps the few-shot text already written for other templates."""
    spec = task.spec
    space, choices = spec.space, spec.choices
    assert space is not None and choices is not None
    k = choices.k
    labels = spec.labels or list(range(k))
    parts = space.parts(levels)
    enum = parts.enumerator
    symbols = enum.for_count(k)
    assert symbols is not None  # check_space
    order = parts.order.positions(k, space.seed)

    def block(question: str, options: Sequence[str]) -> str:
        listed = parts.separator.join(
            f"{_literal(symbols[j])}{enum.delimiter}{options[order[j]]}" for j in range(k)
        )
        return _fill(space.block, {**parts.texts, "question": question, "choices": listed})

    # what the examples' text depends on: the block's text slots and the choice lines
    block_texts = tuple(parts.texts.get(slot) for slot in slots_of(space.block))
    key = (parts.shots, block_texts, parts.separator, enum, tuple(order))
    if examples is None or key not in examples:
        shown = "".join(_example(task, row, block, symbols, order) for row in shots[: parts.shots])
        if examples is None:
            examples = {}
        examples[key] = shown
    question_block = block(
        "{" + space.question + "}", ["{" + choice_field(j) + "}" for j in range(k)]
    )
    prompt = _fill(space.prefix, {**parts.texts, "shots": examples[key]}) + question_block
    try:
        return Template(
            id=".".join(levels.values()),
            prompt=prompt,
            regex=answer_regex(symbols),
            answers={symbols[j]: labels[order[j]] for j in range(k)},
            levels=dict(levels),
        )
    except ValidationError as exc:
        raise HakariInputError(
            f"levels {levels} make a template that does not parse: "
            + exc.errors()[0]["msg"].removeprefix("Value error, "),
            file=str(task.path),
            template=".".join(levels.values()),
            field="space",
        ) from None


def _example(
    task: Task,
    row: Row,
    block: Callable[[str, Sequence[str]], str],
    symbols: Sequence[str],
    order: list[int],
) -> str:
    """One worked example: the block filled with the row, the answer cue and the row's
    symbol under the template's enumerator and choice order, then a blank line."""
    spec = task.spec
    assert spec.space is not None
    if GOLD_FIELD not in row:
        raise HakariInputError(
            "a few-shot example row has no readable choices or gold",
            file=str(task.path),
            field="space.shots_split",
        )
    question = _literal(str(get_path(row, spec.field_path(spec.space.question))))
    shown = block(question, [_literal(str(row[choice_field(j)])) for j in range(len(symbols))])
    symbol = symbols[order.index(int(row[GOLD_FIELD]))]
    joiner = " " if shown and shown[-1].isascii() and not shown[-1].isspace() else ""
    return f"{shown}{joiner}{_literal(symbol)}\n\n"


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

"""Templates built from a task's `space:` (see `spacespec.py` for the task format).

`--templates space:N` takes a seeded balanced sample of N templates (every level of every
dimension about equally often, no template twice), `space:all` the whole product (up to
`ALL_CAP` templates; above it, ask for the count: `space:<size>`), and generated ids can
be named like hand-written ones. Each template is derived from its levels: the prompt
(few-shot examples written into it), the answer regex (the enumerator's symbols) and the
answers map (symbol -> the original index of the choice it shows, so the gold is
remapped under every choice order). Expansion happens here, before the run: the runner,
extraction, constrained decoding and log-likelihood see ordinary templates.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hakari._util.regex import escape as regex_escape
from hakari.errors import HakariInputError
from hakari.tasks.choices import GOLD_FIELD, choice_field
from hakari.tasks.data import Row, get_path, iter_rows
from hakari.tasks.loader import Task, check_answer_keys
from hakari.tasks.spacespec import (
    BUILTIN_ENUMERATORS,
    DEFAULT_BLOCK,
    DEFAULT_PREFIX,
    Enumerator,
    SpaceSelection,
    SpaceSpec,
    parse_selection,
    selection_text,
)
from hakari.tasks.spec import TaskSpec, Template

ALL_CAP = 1000  # `space:all` above this many templates must be asked for by count
_SLOT = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")
_DEFAULT_SLOTS = _SLOT.findall(DEFAULT_PREFIX + DEFAULT_BLOCK)
_DEFAULT_ENUM = Enumerator(symbols=BUILTIN_ENUMERATORS["upper"][0], builtin=True)


def expand_task(
    task: Task, wanted: str | Sequence[str] | None, *, data_dir: Path | None = None
) -> Task:
    """The task with the templates `wanted` asks for from its space put in place of its
    hand-written ones; a task without a space (or asked for hand-written ids) unchanged."""
    spec = task.spec
    space = spec.space
    selection = parse_selection(wanted)
    if space is None:
        if selection is not None:
            raise HakariInputError(
                f"task {spec.name} has no template space (--templates {selection_text(wanted)})",
                file=str(task.path),
                field="--templates",
            )
        return task
    check_space(task)
    ids = [wanted] if isinstance(wanted, str) else list(wanted or ["all"])
    kept: list[Template] = []
    if selection is not None:
        combos = select_levels(space, selection, task)
    elif ids == ["all"]:
        if spec.templates:
            return task
        combos = select_levels(space, SpaceSelection(space.default, None), task)
    else:
        own = {t.id for t in spec.templates}
        combos = [levels_of_id(space, i, task) for i in ids if i not in own]
        if not combos:
            return task
        kept = [t for t in spec.templates if t.id in ids]
    return _with_templates(task, kept + build_templates(task, combos, data_dir=data_dir))


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
        if enum.for_count(k) is None:
            raise HakariInputError(
                f"enumerator {name!r} has {len(enum.symbols)} symbols, the task has {k} choices",
                file=str(task.path),
                field="space.dimensions.enumerator",
            )


def select_levels(space: SpaceSpec, selection: SpaceSelection, task: Task) -> list[dict[str, str]]:
    size = space.size()
    if selection.count is None:
        if size > ALL_CAP:
            raise HakariInputError(
                f"space:all asks for {size:,} templates of task {task.name}, more than "
                f"{ALL_CAP:,}: sample with space:N, or ask for all with space:{size}",
                file=str(task.path),
                field="--templates",
            )
        return all_levels(space)
    if selection.count > size:
        raise HakariInputError(
            f"space:{selection.count} asks for more templates than the space of task "
            f"{task.name} holds ({size:,}); use space:all or space:N with N ≤ {size}",
            file=str(task.path),
            field="--templates",
        )
    if selection.count == size:
        return all_levels(space)
    seed = space.seed if selection.seed is None else selection.seed
    return balanced_sample(space, selection.count, seed)


def all_levels(space: SpaceSpec) -> list[dict[str, str]]:
    combos: list[dict[str, str]] = [{}]
    for dim, levels in space.dimensions.items():
        combos = [{**c, dim: name} for c in combos for name in levels]
    return combos


def balanced_sample(space: SpaceSpec, n: int, seed: int) -> list[dict[str, str]]:
    """n distinct level combinations; each dimension's levels appear n/L times (±1).

    Each dimension's column is its levels repeated to n and shuffled; repeated
    combinations are then repaired by swapping one dimension's entries between rows,
    which keeps every column's counts."""
    rng = random.Random(f"hakari-space:{seed}")
    dims = list(space.dimensions)
    columns: list[list[str]] = []
    for dim in dims:
        names = list(space.dimensions[dim])
        rng.shuffle(names)  # which levels get the extra appearance when L does not divide n
        col = [names[i % len(names)] for i in range(n)]
        rng.shuffle(col)
        columns.append(col)
    rows = [tuple(col[i] for col in columns) for i in range(n)]
    for _ in range(200 * n):
        counts = Counter(rows)
        dup = next((i for i, r in enumerate(rows) if counts[r] > 1), None)
        if dup is None:
            break
        j, d = rng.randrange(n), rng.randrange(len(dims))
        a, b = list(rows[dup]), list(rows[j])
        a[d], b[d] = b[d], a[d]
        rows[dup], rows[j] = tuple(a), tuple(b)
    else:
        rows = _fill_distinct(space, rows, rng)
    return [dict(zip(dims, r, strict=True)) for r in rows]


def _fill_distinct(
    space: SpaceSpec, rows: list[tuple[str, ...]], rng: random.Random
) -> list[tuple[str, ...]]:
    """Swaps did not separate every repeat (n close to the space's size): replace the
    repeats by combinations not yet taken (balance then holds only approximately)."""
    seen: set[tuple[str, ...]] = set()
    unique = [r for r in rows if not (r in seen or seen.add(r))]  # type: ignore[func-returns-value]
    pool = [tuple(c.values()) for c in all_levels(space)]
    rng.shuffle(pool)
    unique.extend(p for p in pool if p not in seen)
    return unique[: len(rows)]


def levels_of_id(space: SpaceSpec, template_id: str, task: Task) -> dict[str, str]:
    parts = template_id.split(".")
    dims = list(space.dimensions)
    if len(parts) == len(dims) and all(
        p in space.dimensions[d] for d, p in zip(dims, parts, strict=True)
    ):
        return dict(zip(dims, parts, strict=True))
    raise HakariInputError(
        f"unknown template id {template_id!r} for task {task.name}: a generated id is one "
        f"level of each dimension joined by '.' ({'.'.join(dims)})",
        file=str(task.path),
        field="--templates",
    )


def _with_templates(task: Task, templates: list[Template]) -> Task:
    """The task with these templates (each validated when built; ids distinct: generated
    ids hold a '.', hand-written ones do not)."""
    return replace(task, spec=task.spec.model_copy(update={"templates": templates}))


# --- one template from its levels ------------------------------------------------------


def build_templates(
    task: Task, combos: Sequence[dict[str, str]], *, data_dir: Path | None = None
) -> list[Template]:
    spec = task.spec
    assert spec.space is not None
    n_shots = max(
        (int(spec.space.dimensions["shots"][c["shots"]]) for c in combos if "shots" in c), default=0
    )
    shots = _shot_rows(task, n_shots, data_dir)
    templates = [build_template(task, levels, shots) for levels in combos]
    check_answer_keys(task, templates, constrained=True)
    return templates


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


def order_of(name: str, k: int, seed: int) -> list[int]:
    """Position -> original choice index under a choice-order level."""
    if name == "given":
        return list(range(k))
    if name == "reversed":
        return list(range(k))[::-1]
    shift = int(name.removeprefix("rotate")) if name != "rotated" else None
    if shift is None:
        shift = 1 + random.Random(f"hakari-rotation:{seed}").randrange(k - 1)
    return [(j + shift) % k for j in range(k)]


def build_template(task: Task, levels: dict[str, str], shots: Sequence[Row]) -> Template:
    """The template of one level combination (its id: the levels joined by '.')."""
    spec = task.spec
    space, choices = spec.space, spec.choices
    assert space is not None and choices is not None
    k = choices.k
    labels = spec.labels or list(range(k))
    values: dict[str, Any] = {d: space.dimensions[d][lvl] for d, lvl in levels.items()}
    enum: Enumerator = values.get("enumerator", _DEFAULT_ENUM)
    symbols = enum.for_count(k)
    assert symbols is not None  # check_space
    order = order_of(values.get("choice_order", "given"), k, space.seed)
    sep = values.get("separator", "\n")
    # the built-in layouts' slots of dimensions this space does not have stay empty
    texts = dict.fromkeys(_DEFAULT_SLOTS, "")
    texts.update({d: v for d, v in values.items() if isinstance(v, str) and d != "choice_order"})

    def block(question: str, options: Sequence[str]) -> str:
        listed = sep.join(f"{symbols[j]}{enum.delimiter}{options[order[j]]}" for j in range(k))
        return _fill(space.block, {**texts, "question": question, "choices": listed})

    examples = []
    for row in shots[: int(values.get("shots", 0))]:
        if GOLD_FIELD not in row:
            raise HakariInputError(
                "a few-shot example row has no readable choices or gold",
                file=str(task.path),
                field="space.shots_split",
            )
        question = _literal(str(get_path(row, spec.field_path(space.question))))
        shown = block(question, [_literal(str(row[choice_field(j)])) for j in range(k)])
        symbol = symbols[order.index(int(row[GOLD_FIELD]))]
        joiner = " " if shown and shown[-1].isascii() and not shown[-1].isspace() else ""
        examples.append(f"{shown}{joiner}{_literal(symbol)}\n\n")
    question_block = block(
        "{" + space.question + "}", ["{" + choice_field(j) + "}" for j in range(k)]
    )
    prompt = _fill(space.prefix, {**texts, "shots": "".join(examples)}) + question_block
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


def answer_regex(symbols: Sequence[str]) -> str:
    """The regex accepting exactly the symbols: a class for single characters, else an
    alternation, longest first (`ii` before `i`)."""
    if all(len(s) == 1 for s in symbols):
        return "[" + "".join(regex_escape(s) for s in symbols) + "]"
    return "|".join(regex_escape(s) for s in sorted(symbols, key=len, reverse=True))


def _literal(text: str) -> str:
    """Data text inside a template prompt (a format string): braces doubled."""
    return text.replace("{", "{{").replace("}", "}}")


def _fill(layout: str, slots: dict[str, str]) -> str:
    return _SLOT.sub(lambda m: slots.get(m.group(1), m.group(0)), layout)


def levels_field(spec: TaskSpec, template_id: str) -> dict[str, Any]:
    """`{"levels": …}` for a generated template's results, `{}` for a hand-written one
    (results.json writes `levels` only where there are some)."""
    levels = next((t.levels for t in spec.templates if t.id == template_id), None)
    return {"levels": dict(levels)} if levels is not None else {}

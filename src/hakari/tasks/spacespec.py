"""The `space:` block of a task file: named dimensions, each a list of levels
(`tasks/spacelevels.py`: one type per kind of dimension), the layouts they are put into,
and the `--templates space:N` selection.

A template of the space is one level of every dimension (`tasks/space.py` builds it):
most dimensions are text put into the prompt where the layout names them
(`{instruction}`, `{answer_cue}`, or any dimension a user adds); `enumerator`,
`choice_order`, `shots` and `layout` have a meaning of their own. A space serves a
multiple-choice task (its block shows `{choices}`, the enumerator decides the answers)
or a generation task (no choices: the answer is text, every template takes the space's
`regex`); `check_answer_kind` says which the task is. See docs/prompt-spaces.md.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, field_validator, model_validator

from hakari.errors import HakariInputError
from hakari.tasks.spacelevels import (
    BUILTIN_LAYOUTS,
    CHOICE_KINDS,
    KINDS,
    Layout,
    Level,
    Levels,
    Shots,
    TemplateParts,
    empty_parts,
    parse_level,
)

DIMENSION_NAME = re.compile(r"[a-z][a-z0-9_]*")  # matched whole
SPECIAL = (*KINDS, "separator")  # dimensions that need no slot in a layout
RESERVED_SLOTS = ("question", "choices", "shots")  # layout slots that are not text levels

# `{name}` in a layout or a level's text (`{{`/`}}` are literal braces)
SLOT = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")

DEFAULT_PREFIX = "{instruction}{shots}"
DEFAULT_BLOCK = "{question_tag}{question}\n{choice_tag}{choices}\n{answer_cue}"
DEFAULT_COUNT = 20  # `--templates all` on a task with no hand-written template


def slots_of(layout: str) -> list[str]:
    """The `{name}` slots of a layout (or a level's text), in order."""
    return SLOT.findall(layout)


# the built-in layouts' slots: those of dimensions a space does not have stay empty
DEFAULT_SLOTS = list(
    dict.fromkeys(
        slots_of(DEFAULT_PREFIX + DEFAULT_BLOCK)
        + [
            slot
            for prefix, block, *_ in BUILTIN_LAYOUTS.values()
            for slot in slots_of(prefix + block)
        ]
    )
)
_LAYOUT_FIELDS = ("prefix", "block", "answer_prefix", "shot_end")  # a `layout` level's


class SpaceSpec(BaseModel):
    """`space:` of a task file, each level parsed to its kind (`spacelevels`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # dimension -> level name -> level, in the file's order
    dimensions: SkipValidation[dict[str, dict[str, Level]]]
    question: str = "question"  # the field holding the question text
    prefix: str = DEFAULT_PREFIX  # what comes before the shots' and the question's block
    block: str = DEFAULT_BLOCK  # one question: its own and every shot's
    answer_prefix: str | None = None  # between an example's block and its answer
    shot_end: str = "\n\n"  # after an example's answer
    # a generation task's answer regex (every template's; a choice task's comes from
    # the enumerator)
    regex: str | None = None
    shots_split: str | None = None  # where few-shot examples come from
    seed: int = Field(default=0, ge=0)  # of `space:N` samples and of `rotated`
    default: int = Field(default=DEFAULT_COUNT, ge=1)  # templates of `--templates all`

    @field_validator("dimensions", mode="before")
    @classmethod
    def _parse(cls, raw: Any) -> dict[str, dict[str, Level]]:
        if not isinstance(raw, dict) or not raw:
            raise ValueError("`dimensions` must be a mapping of dimension name to levels")
        return {str(name): _levels(str(name), levels) for name, levels in raw.items()}

    @model_validator(mode="after")
    def _slots(self) -> SpaceSpec:
        if "layout" in self.dimensions:
            own = sorted(set(_LAYOUT_FIELDS) & self.model_fields_set)
            if own:
                raise ValueError(
                    f"`{own[0]}` and a `layout` dimension: each layout level gives the "
                    "prompt's frame; drop the space's own"
                )
        for layout in self.layouts():
            _check_layout(layout, self.dimensions)
        if "shots" in self.dimensions and self.shots_split is None and self.max_shots():
            raise ValueError("the `shots` dimension needs `shots_split` (where examples come from)")
        if "default" in self.model_fields_set and self.default > self.size():
            raise ValueError(
                f"`default` asks for {self.default} templates; the space holds {self.size():,}"
            )
        return self

    def layouts(self) -> list[Layout]:
        """The frames the space's templates are written in: the `layout` dimension's
        levels, else the space's own `prefix` and `block`."""
        if "layout" in self.dimensions:
            return [
                level for level in self.dimensions["layout"].values() if isinstance(level, Layout)
            ]
        return [self.own_layout()]

    def own_layout(self) -> Layout:
        """The frame of the space's own `prefix`, `block` and example ends (unnamed)."""
        return Layout("", self.prefix, self.block, self.answer_prefix, self.shot_end)

    def check_answer_kind(self, *, choice: bool) -> None:
        """A multiple-choice task's space shows `{choices}` in every block; a generation
        task's has no choices to show, enumerate or order, and names its answer regex."""
        for layout in self.layouts():
            named = f"layout {layout.name!r}'s `block`" if layout.name else "`block`"
            if choice and "choices" not in slots_of(layout.block):
                raise ValueError(f"{named} must contain {{choices}}")
            if not choice and "choices" in slots_of(layout.prefix + layout.block):
                raise ValueError(f"{named} shows {{choices}}: the task has no choices")
        if choice and self.regex is not None:
            raise ValueError("`regex` is a generation task's: a choice task's enumerator decides")
        if not choice:
            wrong = [d for d in CHOICE_KINDS if d in self.dimensions]
            if wrong:
                raise ValueError(f"dimension {wrong[0]!r} needs choices; the task has none")
            if self.regex is None:
                raise ValueError("a generation task's space needs `regex` (its templates' answers)")

    def size(self) -> int:
        return math.prod(len(levels) for levels in self.dimensions.values())

    def default_count(self) -> int:
        """Templates `--templates all` samples: `default` as written, else 20 or the whole
        space when it is smaller."""
        if "default" in self.model_fields_set:
            return self.default
        return min(self.default, self.size())

    def max_shots(self) -> int:
        """The most examples a template of the space shows."""
        return max(
            (self.shots_of({"shots": name}) for name in self.dimensions.get("shots", {})), default=0
        )

    def shots_of(self, levels: Levels) -> int:
        """How many examples the template of these levels shows."""
        if "shots" not in levels:
            return 0
        level = self.level("shots", levels["shots"])
        return level.count if isinstance(level, Shots) else 0

    def fields_read(self) -> list[tuple[str, str]]:
        """Each row field the space's templates read, with where it is read: the question,
        a layout's `{field}` that no dimension fills, a `{field}` in a level's text (text
        levels, separators and delimiters are template text; symbols are literal)."""
        filled = {*self.dimensions, *RESERVED_SLOTS, *DEFAULT_SLOTS}
        out = [("space.question", self.question)]
        for layout in self.layouts():
            for part in ("prefix", "block"):
                where = (
                    f"space.dimensions.layout (level {layout.name!r}) {part}"
                    if layout.name
                    else f"space.{part}"
                )
                out += [
                    (where, name) for name in slots_of(getattr(layout, part)) if name not in filled
                ]
        for dim, levels in self.dimensions.items():
            for name, level in levels.items():
                for text in level.format_texts():
                    out += [(f"space.dimensions.{dim} (level {name!r})", f) for f in _fields(text)]
        return out

    def level(self, dim: str, name: str) -> Level:
        """The level a template's levels name (the one lookup)."""
        return self.dimensions[dim][name]

    def parts(self, levels: Levels) -> TemplateParts:
        """What a template's levels decide, each rendered into the parts in order."""
        parts = empty_parts(DEFAULT_SLOTS, self.own_layout())
        for dim, name in levels.items():
            self.level(dim, name).render(dim, parts)
        return parts

    def is_levels(self, parts: Sequence[str]) -> bool:
        """Whether `parts` name one level of every dimension, in order."""
        return len(parts) == len(self.dimensions) and all(
            p in levels for p, levels in zip(parts, self.dimensions.values(), strict=True)
        )


@dataclass(frozen=True)
class SpaceSelection:
    """`space:N[@SEED]` (count) or `space:all`."""

    count: int | None  # None: all
    seed: int | None  # None: the space's own


_SELECTION = re.compile(r"space:(all|[0-9]+)(?:@([0-9]+))?")  # matched whole


def parse_selection(wanted: str | Sequence[str] | None) -> SpaceSelection | None:
    """The space selection `--templates` asks for, or None (ids or `all`)."""
    items = [wanted] if isinstance(wanted, str) else list(wanted or [])
    spaced = [w for w in items if w.startswith("space")]
    if not spaced:
        return None
    if len(items) > 1:
        raise HakariInputError(
            "a space selection (space:N, space:all) cannot be combined with other "
            "templates; name generated templates by their ids instead",
            field="--templates",
        )
    m = _SELECTION.fullmatch(spaced[0])
    if m is None or m.group(1) == "0":
        raise HakariInputError(
            f"{spaced[0]!r}: write space:N (N ≥ 1 templates sampled), space:N@SEED or space:all",
            field="--templates",
        )
    count = None if m.group(1) == "all" else int(m.group(1))
    return SpaceSelection(count=count, seed=int(m.group(2)) if m.group(2) else None)


def selection_text(wanted: str | Sequence[str] | None) -> str:
    return wanted if isinstance(wanted, str) else ",".join(wanted or [])


def _check_layout(layout: Layout, dimensions: dict[str, dict[str, Level]]) -> None:
    """A layout shows the question in its block, the examples in its prefix, and every
    text dimension somewhere (else two of its levels would be one prompt)."""
    named = f"layout {layout.name!r}: " if layout.name else ""
    block = slots_of(layout.block)
    used = set(slots_of(layout.prefix)) | set(block)
    if "question" not in block:
        raise ValueError(f"{named}`block` must contain {{question}}")
    if "shots" in block:
        raise ValueError(
            f"{named}{{shots}} goes into `prefix`: `block` is repeated for every example, the "
            "examples come before the question's block"
        )
    for name in dimensions:
        if name not in SPECIAL and name not in used:
            raise ValueError(
                f"{named}dimension {name!r} is not placed: put {{{name}}} into `prefix` or `block`"
            )
    if "shots" in dimensions and "shots" not in used:
        raise ValueError(f"{named}the `shots` dimension is not placed: put {{shots}} into `prefix`")


def _fields(text: str) -> list[str]:
    """The `{field}` names of a piece of template text (one that does not parse is
    refused when its template is built)."""
    try:
        return [name for _, name, _, _ in string.Formatter().parse(text) if name]
    except ValueError:
        return []


def _levels(dim: str, raw: Any) -> dict[str, Level]:
    """A dimension's levels as {name: level}."""
    if not DIMENSION_NAME.fullmatch(dim):
        raise ValueError(f"dimension name {dim!r} must be lower-case letters, digits and _")
    if dim in RESERVED_SLOTS and dim != "shots":
        raise ValueError(f"{{{dim}}} is filled by hakari; choose another dimension name")
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"dimension {dim!r} is empty: give it a list of at least one level")
    out: dict[str, Level] = {}
    for item in raw:
        level = parse_level(dim, item)
        if level.name in out:
            raise ValueError(f"dimension {dim!r}: level {level.name!r} is given twice")
        out[level.name] = level
    return out

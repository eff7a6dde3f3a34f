"""The `space:` block of a task file and the built-in levels it can name.

A space is named dimensions, each a list of levels; a template of the space is one level
of every dimension (`tasks/space.py` builds it). Most dimensions are text put into the
prompt where the layout names them (`{instruction}`, `{answer_cue}`, or any dimension a
user adds); three have a meaning of their own: `enumerator` (the choice symbols, which
become the answer regex and the answers map), `choice_order` (a permutation of the
choices, the gold remapped) and `shots` (how many worked examples precede the question),
and `separator` joins the choice lines. See docs/prompt-spaces.md.

A level is written as a built-in level's name (`ja_plain`, `upper`, `reversed`, `3`) or
as a one-key mapping `{name: value}` of the user's own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hakari.errors import HakariInputError

LEVEL_NAME = re.compile(r"^[0-9A-Za-z_]+$")
DIMENSION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
SPECIAL = ("enumerator", "choice_order", "shots", "separator")
RESERVED_SLOTS = ("question", "choices", "shots")  # layout slots that are not text levels

# --- built-in levels ------------------------------------------------------------------

_ROMAN = ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x"]
_KANA = ["ア", "イ", "ウ", "エ", "オ", "カ", "キ", "ク", "ケ", "コ"]
_UPPER = [chr(ord("A") + i) for i in range(26)]

# name -> (symbols for up to N choices, text between the symbol and the choice)
BUILTIN_ENUMERATORS: dict[str, tuple[list[str], str]] = {
    "upper": (_UPPER, ". "),
    "lower": ([c.lower() for c in _UPPER], ". "),
    "number": ([str(i + 1) for i in range(26)], ". "),
    "paren": ([f"({c})" for c in _UPPER], " "),
    "roman": (_ROMAN, ". "),
    "kana": (_KANA, "．"),
    "fullwidth": ([chr(ord("Ａ") + i) for i in range(26)], "．"),
}

BUILTIN_TEXT: dict[str, dict[str, str]] = {
    "instruction": {
        "en_plain": "Answer the following multiple-choice question.\n\n",
        "en_label": "Choose the correct answer to the question below. "
        "Reply with the label of the option only.\n\n",
        "en_exam": "The following is a multiple-choice question from an exam. "
        "Select the single best answer.\n\n",
        "en_none": "",
        "ja_plain": "次の多肢選択問題に答えてください。\n\n",
        "ja_label": "以下の質問に対して、正しい選択肢の記号のみで答えてください。\n\n",
        "ja_exam": "以下は試験の多肢選択問題です。最も適切な答えを一つ選んでください。\n\n",
        "ja_terse": "次の問題に答えよ。\n\n",
    },
    "question_tag": {
        "none": "",
        "question": "Question: ",
        "q": "Q: ",
        "mondai": "問題：",
        "shitsumon": "質問：",
    },
    "choice_tag": {
        "none": "",
        "options": "Options:\n",
        "choices": "Choices:\n",
        "sentakushi": "選択肢：\n",
    },
    "separator": {"newline": "\n", "semicolon": "; ", "pipe": " | ", "touten": "、"},
    "answer_cue": {
        "answer": "Answer:",
        "answer_is": "The answer is",
        "kotae": "答え：",
        "seikai": "正解は",
    },
}

CHOICE_ORDERS = re.compile(r"^(given|reversed|rotated|rotate[0-9]+)$")

DEFAULT_PREFIX = "{instruction}{shots}"
DEFAULT_BLOCK = "{question_tag}{question}\n{choice_tag}{choices}\n{answer_cue}"


class Enumerator(BaseModel):
    """Choice symbols and the text between a symbol and its choice."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    symbols: list[str] = Field(min_length=2)
    delimiter: str = ". "
    builtin: bool = False  # built-in symbols are cut to the task's choice count

    def for_count(self, k: int) -> list[str] | None:
        """The first k symbols (built-in), or the symbols when there are exactly k."""
        if self.builtin:
            return self.symbols[:k] if len(self.symbols) >= k else None
        return self.symbols if len(self.symbols) == k else None


class SpaceSpec(BaseModel):
    """`space:` of a task file, levels resolved to their values (the names kept)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    dimensions: dict[str, dict[str, Any]]
    question: str = "question"  # the field holding the question text
    prefix: str = DEFAULT_PREFIX  # what comes before the shots' and the question's block
    block: str = DEFAULT_BLOCK  # one question: its own and every shot's
    shots_split: str | None = None  # where few-shot examples come from
    seed: int = Field(default=0, ge=0)  # of `space:N` samples and of `rotated`
    default: int = Field(default=20, ge=1)  # templates of `--templates all` with no others

    @field_validator("dimensions", mode="before")
    @classmethod
    def _resolve(cls, raw: Any) -> dict[str, dict[str, Any]]:
        if not isinstance(raw, dict) or not raw:
            raise ValueError("`dimensions` must be a mapping of dimension name to levels")
        return {str(name): _levels(str(name), levels) for name, levels in raw.items()}

    @model_validator(mode="after")
    def _slots(self) -> SpaceSpec:
        used = set(_slots_of(self.prefix)) | set(_slots_of(self.block))
        for slot in ("question", "choices"):
            if slot not in _slots_of(self.block):
                raise ValueError(f"`block` must contain {{{slot}}}")
        for name in self.dimensions:
            if name not in SPECIAL and name not in used:
                raise ValueError(
                    f"dimension {name!r} is not placed: put {{{name}}} into `prefix` or `block`"
                )
        if "shots" in self.dimensions:
            if self.shots_split is None and any(self.dimensions["shots"].values()):
                raise ValueError(
                    "the `shots` dimension needs `shots_split` (where examples come from)"
                )
            if "shots" not in used:
                raise ValueError("the `shots` dimension is not placed: put {shots} into `prefix`")
        return self

    def size(self) -> int:
        n = 1
        for levels in self.dimensions.values():
            n *= len(levels)
        return n

    def max_shots(self) -> int:
        return max(self.dimensions.get("shots", {"0": 0}).values())


@dataclass(frozen=True)
class SpaceSelection:
    """`space:N[@SEED]` (count) or `space:all`."""

    count: int | None  # None: all
    seed: int | None  # None: the space's own


_SELECTION = re.compile(r"^space:(all|[0-9]+)(?:@([0-9]+))?$")


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
    m = _SELECTION.match(spaced[0])
    if m is None or m.group(1) == "0":
        raise HakariInputError(
            f"{spaced[0]!r}: write space:N (N ≥ 1 templates sampled), space:N@SEED or space:all",
            field="--templates",
        )
    count = None if m.group(1) == "all" else int(m.group(1))
    return SpaceSelection(count=count, seed=int(m.group(2)) if m.group(2) else None)


def selection_text(wanted: str | Sequence[str] | None) -> str:
    return wanted if isinstance(wanted, str) else ",".join(wanted or [])


def _slots_of(layout: str) -> list[str]:
    return re.findall(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})", layout)


def _levels(dim: str, raw: Any) -> dict[str, Any]:
    """A dimension's levels as {name: value}, built-in names looked up."""
    if not DIMENSION_NAME.match(dim):
        raise ValueError(f"dimension name {dim!r} must be lower-case letters, digits and _")
    if dim in RESERVED_SLOTS and dim != "shots":
        raise ValueError(f"{{{dim}}} is filled by hakari; choose another dimension name")
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"dimension {dim!r} is empty: give it a list of at least one level")
    out: dict[str, Any] = {}
    for item in raw:
        if isinstance(item, dict) and len(item) == 1:
            ((name, value),) = item.items()
            name = str(name)
            value = _own_value(dim, name, value)
        elif isinstance(item, str | int) and not isinstance(item, bool):
            name = str(item)
            value = _builtin_value(dim, name)
        else:
            raise ValueError(
                f"dimension {dim!r}: a level is a built-in name or a one-key mapping "
                f"{{name: value}}, not {item!r}"
            )
        if not LEVEL_NAME.match(name):
            raise ValueError(f"dimension {dim!r}: level name {name!r} must be letters, digits, _")
        if name in out:
            raise ValueError(f"dimension {dim!r}: level {name!r} is given twice")
        out[name] = value
    return out


def _builtin_value(dim: str, name: str) -> Any:
    if dim == "enumerator":
        if name not in BUILTIN_ENUMERATORS:
            known = ", ".join(BUILTIN_ENUMERATORS)
            raise ValueError(f"unknown built-in enumerator {name!r} (built-in: {known})")
        symbols, delimiter = BUILTIN_ENUMERATORS[name]
        return Enumerator(symbols=symbols, delimiter=delimiter, builtin=True)
    if dim == "choice_order":
        if not CHOICE_ORDERS.match(name):
            raise ValueError(f"unknown choice order {name!r} (given, reversed, rotated, rotateN)")
        return name
    if dim == "shots":
        if not name.isdigit() or int(name) > 64:
            raise ValueError(f"shots level {name!r} must be a count of examples from 0 to 64")
        return int(name)
    builtin = BUILTIN_TEXT.get(dim, {})
    if name not in builtin:
        known = f" (built-in: {', '.join(builtin)})" if builtin else ""
        raise ValueError(
            f"dimension {dim!r}: {name!r} is not a built-in level{known}; "
            f"write your own as {{{name}: text}}"
        )
    return builtin[name]


def _own_value(dim: str, name: str, value: Any) -> Any:
    if dim == "enumerator":
        if isinstance(value, list):
            value = {"symbols": value}
        if not isinstance(value, dict):
            raise ValueError(
                f"enumerator {name!r}: give a list of symbols or {{symbols, delimiter}}"
            )
        symbols = value.get("symbols")
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise ValueError(f"enumerator {name!r}: `symbols` must be a list of strings")
        bad = [s for s in symbols if not s.strip() or s != s.strip() or "\n" in s]
        if bad or len(set(symbols)) != len(symbols):
            raise ValueError(
                f"enumerator {name!r}: symbols must be distinct, non-empty, without "
                f"surrounding spaces (got {symbols!r})"
            )
        return Enumerator(**value)
    if dim in ("choice_order", "shots"):
        raise ValueError(f"dimension {dim!r} takes built-in level names only, not {name!r}")
    if not isinstance(value, str):
        raise ValueError(f"dimension {dim!r}: level {name!r} must be text, not {value!r}")
    return value

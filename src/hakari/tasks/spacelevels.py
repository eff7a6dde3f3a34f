"""The levels of a prompt space: one small type per kind of dimension, each with its own
parse (from the task file) and render (into the template being built).

A dimension's kind follows from its name, once (`kind_of`): `enumerator` (the choice
symbols: the answer regex and the answers map), `choice_order` (a permutation of the
choices, the gold remapped), `shots` (how many worked examples precede the question),
`layout` (the prompt's frame: its `prefix` and `block` and how a worked example ends,
in place of the space's own), `prompt_format` (`completion`: the prompt as plain text;
`chat`: as a user message in the model's chat template); every other dimension is
text, put where a layout names it (`{instruction}`, or any dimension a user adds), and
the text of `separator` also joins the choice lines. `enumerator` and `choice_order`
need choices; a generation task's space has the others.

A level is written as a built-in level's name (`ja_plain`, `upper`, `reversed`, `3`) or as
a one-key mapping `{name: value}` of the user's own (`parse_level`). Text levels,
separators and delimiters are pieces of the template (format text: `{{`/`}}` are braces;
a `{field}` would read the row, and one that reads the gold is refused by the task's
checks); enumerator symbols are the model's answers and are shown literally.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

LEVEL_NAME = re.compile(r"[0-9A-Za-z_]+")  # matched whole (`fullmatch`: no trailing "\n")
MAX_SHOTS = 64

Levels = dict[str, str]
"""A template's levels: dimension -> level name, in the space's dimension order (the
template's id is the names joined by "."; results.json's `templates[ID].levels`)."""


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
    # after a generation task's instruction: how the answer is to be written
    "answer_format": {
        "none": "",
        "answer_only": "\n答えのみを出力してください。",
        "no_explanation": "\n説明は書かず、答えだけを書いてください。",
    },
}

# llm-jp-eval v1.3.0's prompt (`utils.get_evaluation_prompt`) and Nejumi's message
# (wandb/llm-leaderboard 6e29db4, `scripts/evaluator/jaster.py`: `message_intro`, "\n",
# the instruction, "\n\n", the input; its few-shot turns flattened as text here)
ALPACA_HEADER = (
    "以下は、タスクを説明する指示と、文脈のある入力の組み合わせです。"
    "要求を適切に満たす応答を書きなさい。\n\n"
)
NEJUMI_INTRO = (
    "以下に、あるタスクを説明する指示があり、それに付随する入力が更なる文脈を提供しています。"
    "リクエストを適切に完了するための回答を記述してください。"
)
_ALPACA_BLOCK = "\n\n### 入力:\n{question}\n\n### 応答:\n"
# name -> (prefix, block, text between an example's block and its answer, example end)
BUILTIN_LAYOUTS: dict[str, tuple[str, str, str | None, str]] = {
    "alpaca": (
        ALPACA_HEADER + "### 指示:\n{instruction}{answer_format}{shots}",
        _ALPACA_BLOCK,
        "",
        "",
    ),
    "alpaca_bare": ("### 指示:\n{instruction}{answer_format}{shots}", _ALPACA_BLOCK, "", ""),
    "nejumi": (
        NEJUMI_INTRO + "\n{instruction}{answer_format}\n\n{shots}",
        "{question}",
        "\n",
        "\n\n",
    ),
    "plain": ("{instruction}{answer_format}\n\n{shots}", "{question}\n答え：", "", "\n\n"),
}

_CHOICE_ORDER = re.compile(r"given|reversed|rotated|rotate[0-9]+")


# --- what a template's levels decide ----------------------------------------------------


@dataclass
class TemplateParts:
    """What a template's levels decide, each level rendering its part (`render`)."""

    texts: dict[str, str]  # layout slot -> text (a text dimension's slot is its name)
    enumerator: Enumerator
    order: ChoiceOrder
    layout: Layout  # the space's own, unless a `layout` level gives another
    shots: int = 0
    prompt_format: Literal["completion", "chat"] | None = None  # None: the run's

    @property
    def separator(self) -> str:
        """Between the choice lines."""
        return self.texts.get("separator", "\n")


# --- the kinds -----------------------------------------------------------------------


@dataclass(frozen=True)
class TextLevel:
    """Text put where a layout names its dimension (`separator`: between the choices)."""

    name: str
    text: str

    @classmethod
    def builtin(cls, dim: str, name: str) -> TextLevel:
        known = BUILTIN_TEXT.get(dim, {})
        if name not in known:
            listed = f" (built-in: {', '.join(known)})" if known else ""
            raise ValueError(
                f"dimension {dim!r}: {name!r} is not a built-in level{listed}; "
                f"write your own as {{{name}: text}}"
            )
        return cls(name, known[name])

    @classmethod
    def own(cls, dim: str, name: str, value: Any) -> TextLevel:
        if not isinstance(value, str):
            raise ValueError(f"dimension {dim!r}: level {name!r} must be text, not {value!r}")
        return cls(name, value)

    def render(self, dim: str, parts: TemplateParts) -> None:
        parts.texts[dim] = self.text

    def effect(self, k: int, seed: int) -> object:
        return self.text

    def format_texts(self) -> list[str]:
        return [self.text]


@dataclass(frozen=True)
class Enumerator:
    """Choice symbols and the text between a symbol and its choice."""

    name: str
    symbols: tuple[str, ...]
    delimiter: str = ". "
    builtin_symbols: bool = False  # built-in symbols are cut to the task's choice count

    @classmethod
    def builtin(cls, dim: str, name: str) -> Enumerator:
        if name not in BUILTIN_ENUMERATORS:
            known = ", ".join(BUILTIN_ENUMERATORS)
            raise ValueError(f"unknown built-in enumerator {name!r} (built-in: {known})")
        symbols, delimiter = BUILTIN_ENUMERATORS[name]
        return cls(name, tuple(symbols), delimiter, builtin_symbols=True)

    @classmethod
    def own(cls, dim: str, name: str, value: Any) -> Enumerator:
        if isinstance(value, list):
            value = {"symbols": value}
        if not isinstance(value, dict) or not set(value) <= {"symbols", "delimiter"}:
            raise ValueError(
                f"enumerator {name!r}: give a list of symbols or {{symbols, delimiter}}"
            )
        symbols = value.get("symbols")
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise ValueError(f"enumerator {name!r}: `symbols` must be a list of strings")
        if len(symbols) < 2:
            raise ValueError(f"enumerator {name!r}: give at least 2 symbols (got {symbols!r})")
        bad = [s for s in symbols if not s.strip() or s != s.strip() or "\n" in s]
        if bad or len(set(symbols)) != len(symbols):
            raise ValueError(
                f"enumerator {name!r}: symbols must be distinct, non-empty, without "
                f"surrounding spaces (got {symbols!r})"
            )
        delimiter = value.get("delimiter", ". ")
        if not isinstance(delimiter, str):
            raise ValueError(f"enumerator {name!r}: `delimiter` must be text, not {delimiter!r}")
        return cls(name, tuple(symbols), delimiter)

    def for_count(self, k: int) -> tuple[str, ...] | None:
        """The first k symbols (built-in), or the symbols when there are exactly k."""
        if self.builtin_symbols:
            return self.symbols[:k] if len(self.symbols) >= k else None
        return self.symbols if len(self.symbols) == k else None

    def render(self, dim: str, parts: TemplateParts) -> None:
        parts.enumerator = self

    def effect(self, k: int, seed: int) -> object:
        return (self.for_count(k), self.delimiter)

    def format_texts(self) -> list[str]:
        return [self.delimiter]


@dataclass(frozen=True)
class ChoiceOrder:
    """The order the choices are shown in: `given`, `reversed`, `rotated` (by a seeded
    shift 1..k-1) or `rotateN` (by N, modulo k)."""

    name: str

    @classmethod
    def builtin(cls, dim: str, name: str) -> ChoiceOrder:
        if not _CHOICE_ORDER.fullmatch(name):
            raise ValueError(f"unknown choice order {name!r} (given, reversed, rotated, rotateN)")
        return cls(name)

    @classmethod
    def own(cls, dim: str, name: str, value: Any) -> ChoiceOrder:
        raise ValueError(f"dimension {dim!r} takes built-in level names only, not {name!r}")

    def positions(self, k: int, seed: int) -> list[int]:
        """Position -> original choice index."""
        if self.name == "given":
            return list(range(k))
        if self.name == "reversed":
            return list(range(k))[::-1]
        if self.name == "rotated":
            shift = _seeded_shift(k, seed)
        else:
            shift = int(self.name.removeprefix("rotate"))
        return [(j + shift) % k for j in range(k)]

    def render(self, dim: str, parts: TemplateParts) -> None:
        parts.order = self

    def effect(self, k: int, seed: int) -> object:
        return tuple(self.positions(k, seed))

    def format_texts(self) -> list[str]:
        return []


@lru_cache(maxsize=256)
def _seeded_shift(k: int, seed: int) -> int:
    """The shift of `rotated`: 1..k-1, from the space's seed."""
    return 1 + random.Random(f"hakari-rotation:{seed}").randrange(k - 1)


@dataclass(frozen=True)
class Shots:
    """How many worked examples (the first rows of `shots_split`) precede the question."""

    name: str
    count: int

    @classmethod
    def builtin(cls, dim: str, name: str) -> Shots:
        if not name.isdigit() or int(name) > MAX_SHOTS:
            raise ValueError(
                f"shots level {name!r} must be a count of examples from 0 to {MAX_SHOTS}"
            )
        return cls(name, int(name))

    @classmethod
    def own(cls, dim: str, name: str, value: Any) -> Shots:
        raise ValueError(f"dimension {dim!r} takes built-in level names only, not {name!r}")

    def render(self, dim: str, parts: TemplateParts) -> None:
        parts.shots = self.count

    def effect(self, k: int, seed: int) -> object:
        return self.count

    def format_texts(self) -> list[str]:
        return []


PromptFormatName = Literal["completion", "chat"]
PROMPT_FORMATS: tuple[PromptFormatName, ...] = ("completion", "chat")


@dataclass(frozen=True)
class PromptFormatLevel:
    """How the prompt goes to the model: `completion` (plain text) or `chat` (one user
    message in the model's chat template), whatever the run's `--prompt-format` says."""

    name: PromptFormatName

    @classmethod
    def builtin(cls, dim: str, name: str) -> PromptFormatLevel:
        for known in PROMPT_FORMATS:
            if name == known:
                return cls(known)
        raise ValueError(f"unknown prompt format {name!r} (completion, chat)")

    @classmethod
    def own(cls, dim: str, name: str, value: Any) -> PromptFormatLevel:
        raise ValueError(f"dimension {dim!r} takes built-in level names only, not {name!r}")

    def render(self, dim: str, parts: TemplateParts) -> None:
        parts.prompt_format = self.name

    def effect(self, k: int, seed: int) -> object:
        return self.name

    def format_texts(self) -> list[str]:
        return []


_LAYOUT_KEYS = {"prefix", "block", "answer_prefix", "shot_end"}


@dataclass(frozen=True)
class Layout:
    """The frame of a prompt: `prefix` (before the examples' and the question's blocks;
    `{shots}` is where the examples go), `block` (one question: its own and every
    example's), and how an example is written: its block, `answer_prefix`, its answer,
    `shot_end`. `answer_prefix` None: a space after a block that ends in a visible ASCII
    character ("Answer: A"), else nothing."""

    name: str
    prefix: str
    block: str
    answer_prefix: str | None = None
    shot_end: str = "\n\n"

    @classmethod
    def builtin(cls, dim: str, name: str) -> Layout:
        if name not in BUILTIN_LAYOUTS:
            known = ", ".join(BUILTIN_LAYOUTS)
            raise ValueError(
                f"unknown built-in layout {name!r} (built-in: {known}); write your own as "
                f"{{{name}: {{prefix, block}}}}"
            )
        return cls(name, *BUILTIN_LAYOUTS[name])

    @classmethod
    def own(cls, dim: str, name: str, value: Any) -> Layout:
        if not isinstance(value, dict) or not {"prefix", "block"} <= set(value) <= _LAYOUT_KEYS:
            raise ValueError(
                f"layout {name!r}: give {{prefix, block}} and optionally answer_prefix, shot_end"
            )
        texts = {k: v for k, v in value.items() if v is not None}
        if not all(isinstance(v, str) for v in texts.values()):
            raise ValueError(f"layout {name!r}: prefix, block, answer_prefix, shot_end are text")
        return cls(name, **texts)

    def example_joiner(self, shown: str) -> str:
        """What comes between an example's block and its answer."""
        if self.answer_prefix is not None:
            return self.answer_prefix
        return " " if shown and shown[-1].isascii() and not shown[-1].isspace() else ""

    def render(self, dim: str, parts: TemplateParts) -> None:
        parts.layout = self

    def effect(self, k: int, seed: int) -> object:
        return (self.prefix, self.block, self.answer_prefix, self.shot_end)

    def format_texts(self) -> list[str]:
        return [self.prefix, self.block, self.answer_prefix or "", self.shot_end]


Level = TextLevel | Enumerator | ChoiceOrder | Shots | Layout | PromptFormatLevel
LevelKind = (
    type[TextLevel]
    | type[Enumerator]
    | type[ChoiceOrder]
    | type[Shots]
    | type[Layout]
    | type[PromptFormatLevel]
)

KINDS: dict[str, LevelKind] = {
    "enumerator": Enumerator,
    "choice_order": ChoiceOrder,
    "shots": Shots,
    "layout": Layout,
    "prompt_format": PromptFormatLevel,
}
PROMPT_FORMAT_DIMENSION = {name: PromptFormatLevel(name) for name in PROMPT_FORMATS}
CHOICE_KINDS = ("enumerator", "choice_order")  # dimensions that need choices
DEFAULT_ENUMERATOR = Enumerator.builtin("enumerator", "upper")
GIVEN = ChoiceOrder("given")


def kind_of(dim: str) -> LevelKind:
    """The kind of a dimension's levels: its own for those with a meaning, else text."""
    return KINDS.get(dim, TextLevel)


def parse_level(dim: str, item: Any) -> Level:
    """One level as the task file writes it: a built-in name or `{name: value}`."""
    kind = kind_of(dim)
    level: Level
    if isinstance(item, dict) and len(item) == 1:
        ((name, value),) = item.items()
        _check_name(dim, str(name))
        level = kind.own(dim, str(name), value)
    elif isinstance(item, str | int) and not isinstance(item, bool):
        _check_name(dim, str(item))
        level = kind.builtin(dim, str(item))
    else:
        raise ValueError(
            f"dimension {dim!r}: a level is a built-in name or a one-key mapping "
            f"{{name: value}}, not {item!r}"
        )
    return level


def _check_name(dim: str, name: str) -> None:
    if not LEVEL_NAME.fullmatch(name):
        raise ValueError(f"dimension {dim!r}: level name {name!r} must be letters, digits, _")


def empty_parts(text_slots: list[str], layout: Layout) -> TemplateParts:
    """The parts before any level renders: the given layout slots empty, the default
    enumerator (upper), the given order, the space's own layout, no shots."""
    return TemplateParts(dict.fromkeys(text_slots, ""), DEFAULT_ENUMERATOR, GIVEN, layout)

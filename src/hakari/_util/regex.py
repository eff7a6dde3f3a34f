"""User regexes against untrusted text, in time linear in the text (google-re2).

A regex from a task file, a judge prompt or a pfgen rule is user input, and the text it
meets (model output, answer files) is untrusted. Python's `re` backtracks: `(a+)+$`
against 46 `a`s and `!` never returns. Every such match in hakari goes through
`LinearRegex`, which runs RE2 (automata, no backtracking: time linear in the text, memory
bounded per pattern). Fixed patterns written in hakari's own code may still use `re`.

The one decision: the dialect. A regex is read as RE2 syntax with Python's meanings
wherever the two spell the same thing differently, so a task file written for Python's
`re` keeps its meaning:

* `\\d \\w \\s` (and `\\D \\W \\S`) are Unicode, as in Python and in the constrained
  decoder (llguidance); RE2's own are ASCII (`\\d` would miss `３`, `\\w` every kana);
* `\\Z` is the end of the text, `\\uXXXX`, `\\UXXXXXXXX`, `\\N{NAME}`, `{,n}` and `(?#...)`
  are accepted as Python writes them; RE2's `\\p{Han}`, `\\p{Hiragana}`... work too;
* refused with the reason, because they need backtracking or would silently mean
  something else: look-arounds, back-references, conditionals, atomic groups and
  possessive repeats, `\\b`/`\\B` (ASCII in RE2, Unicode in Python), POSIX classes
  (`[[:alpha:]]` is a literal set in Python), `\\W`/`\\S` inside a class, `\\C`, repeat
  counts above 1000 and patterns whose automaton would exceed RE2's memory budget;
* `$` (without `(?m)`) is the end of the text; Python's also matched before a final
  newline. This is the one difference left, documented in docs/task-format.md.

Text is encoded once (`Subject`: UTF-8; a lone surrogate from a hostile server answer
passes through as its bytes, never an error) and matched on byte offsets. Patterns that
hakari composes around a translated one (the whole-token rule of `tasks.extract`) are
already RE2 syntax: `compile_re2`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

# Python's `\s` for str: the characters for which str.isspace() is true.
_SPACE = (
    r"\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}"
    r"\x{202f}\x{205f}\x{3000}"
)
_WORD = r"\p{L}\p{N}_"  # Python's `\w` for str: str.isalnum() or "_"
_DIGIT = r"\p{Nd}"  # Python's `\d` for str: str.isdecimal()
_OUTSIDE = {
    "d": _DIGIT,
    "D": r"\P{Nd}",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
    "Z": r"\z",
}
_INSIDE = {"d": _DIGIT, "D": r"\P{Nd}", "w": _WORD, "s": _SPACE, "b": r"\x08"}
_BACKTRACKING = "needs a backtracking engine; hakari matches regexes in linear time (RE2)"
_REFUSED_ESCAPES = {
    "b": "\\b is ASCII-only in RE2 and Unicode in Python; leave it out (an answer is "
    "already matched only as a whole token)",
    "B": "\\B is ASCII-only in RE2 and Unicode in Python; leave it out",
    "C": "\\C (one byte) would split UTF-8 characters",
}
_HEX = {"u": 4, "U": 8}
_OCTAL3 = re.compile(r"[0-7]{3}")
_EMPTY_MIN = re.compile(r"\{,(\d+)\}")
_GROUP_OPENERS = {
    "(?=": f"a look-ahead (?=...) {_BACKTRACKING}",
    "(?!": f"a look-ahead (?!...) {_BACKTRACKING}",
    "(?<=": f"a look-behind (?<=...) {_BACKTRACKING}",
    "(?<!": f"a look-behind (?<!...) {_BACKTRACKING}",
    "(?P=": f"a back-reference (?P=name) {_BACKTRACKING}",
    "(?(": f"a conditional group (?(...) {_BACKTRACKING}",
    "(?>": f"an atomic group (?>...) {_BACKTRACKING}",
    "(?x": "verbose mode (?x) is not supported by RE2",
}


class RegexError(ValueError):
    """A pattern the linear-time matcher cannot take; the message says why."""


_NAMED_GROUP = re.compile(r"\(\?P?<(?![=!])[^>]*>")


def to_re2(pattern: str, *, capture: bool = True) -> str:
    """The pattern in RE2 syntax with Python's meanings (see the module docstring);
    `capture=False` makes its groups non-capturing (to embed it several times)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            piece, i = _escape(pattern, i, in_class)
            out.append(piece)
            continue
        if in_class:
            if ch == "]":
                in_class = False
            elif ch == "[" and pattern.startswith(("[:", "[=", "[."), i):
                raise RegexError(
                    f"{pattern[i : i + 2]!r} inside a class: Python reads a literal '[', "
                    "RE2 a POSIX class; write \\[ for the bracket or \\p{...} for a class"
                )
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            end = i + 2 if pattern.startswith("^", i + 1) else i + 1
            if pattern.startswith("]", end):  # a leading ] is a literal in both
                end += 1
            out.append(pattern[i:end])
            i = end
        elif ch == "(" and not capture and not pattern.startswith("(?", i):
            out.append("(?:")
            i += 1
        elif ch == "(" and not capture and (m := _NAMED_GROUP.match(pattern, i)):
            out.append("(?:")
            i = m.end()
        elif ch == "(" and pattern.startswith("(?", i):
            if pattern.startswith("(?#", i):  # a Python comment: up to the first ")"
                close = pattern.find(")", i)
                if close < 0:
                    raise RegexError("missing ) after (?# comment")
                i = close + 1
                continue
            for opener, why in _GROUP_OPENERS.items():
                if pattern.startswith(opener, i):
                    raise RegexError(why)
            out.append(ch)
            i += 1
        elif ch == "{" and (m := _EMPTY_MIN.match(pattern, i)):
            out.append(f"{{0,{m.group(1)}}}")  # Python's {,n}; RE2 reads it literally
            i = m.end()
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The RE2 form of the escape at `pattern[i]` (a backslash) and the index after it."""
    if i + 1 >= len(pattern):
        raise RegexError("trailing backslash")
    code = pattern[i + 1]
    if code in _HEX or code == "N":
        return _code_point(pattern, i, code)
    if code in "123456789":
        if _OCTAL3.match(pattern, i + 1):  # Python reads \ooo as an octal character
            return pattern[i : i + 4], i + 4
        raise RegexError(f"a back-reference \\{code} {_BACKTRACKING}")
    table = _INSIDE if in_class else _OUTSIDE
    if code in table:
        return table[code], i + 2
    if in_class and code in "WS":
        raise RegexError(f"\\{code} inside [...] has no RE2 form; write [^...] instead")
    if not in_class and code in _REFUSED_ESCAPES:
        raise RegexError(_REFUSED_ESCAPES[code])
    return pattern[i : i + 2], i + 2


def _code_point(pattern: str, i: int, code: str) -> tuple[str, int]:
    if code == "N":
        close = pattern.find("}", i)
        if not pattern.startswith("{", i + 2) or close < 0:
            raise RegexError("\\N needs a character name: \\N{NAME}")
        try:
            char = unicodedata.lookup(pattern[i + 3 : close])
        except KeyError:
            raise RegexError(f"unknown character name {pattern[i + 3 : close]!r}") from None
        return f"\\x{{{ord(char):x}}}", close + 1
    digits = pattern[i + 2 : i + 2 + _HEX[code]]
    if len(digits) != _HEX[code] or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise RegexError(f"\\{code} needs {_HEX[code]} hex digits")
    return f"\\x{{{digits}}}", i + 2 + _HEX[code]


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    return options


def _compile(source: str) -> Any:
    try:
        return re2.compile(source, _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid pattern"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise RegexError(str(reason)) from None
    except UnicodeEncodeError:
        raise RegexError("the pattern is not valid Unicode (a lone surrogate)") from None


class Subject:
    """A text prepared once for several searches: its UTF-8 bytes. Offsets are bytes."""

    __slots__ = ("data", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")

    def slice(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "surrogatepass")

    def char_offset(self, offset: int) -> int:
        return len(self.slice(0, offset))


@dataclass(frozen=True)
class Found:
    """A match in a str: character offsets and the matched text."""

    start: int
    end: int
    text: str


class LinearRegex:
    """One user regex, compiled for RE2 (leftmost-first like Python's `re`)."""

    def __init__(self, source: str, *, ignore_case: bool = False, dialect: str = "python") -> None:
        """`source` in the Python dialect of the module docstring, or (`dialect="re2"`)
        already in RE2 syntax: a pattern hakari composes around a translated one."""
        self.source = source
        translated = to_re2(source) if dialect == "python" else source
        self.re2_pattern = f"(?i:{translated})" if ignore_case else translated
        self._first = _compile(self.re2_pattern)

    def __repr__(self) -> str:
        return f"LinearRegex({self.source!r})"

    def matches_empty(self) -> bool:
        return self._first.fullmatch(b"") is not None

    # -- byte offsets on a Subject ---------------------------------------------------

    def find(self, subject: Subject) -> tuple[int, int] | None:
        """The leftmost-first match: (start, end) in bytes."""
        match = self._first.search(subject.data)
        return match.span() if match is not None else None

    def group_span(self, subject: Subject) -> tuple[int, int] | None:
        """(start, end) in bytes of the first group that took part in the leftmost-first
        match (for a pattern made of alternatives that each capture one group)."""
        match = self._first.search(subject.data)
        if match is None:
            return None
        taking_part = (g for g in range(1, self._first.groups + 1) if match.start(g) >= 0)
        group = next(taking_part, None)
        return match.span(group) if group is not None else None

    # -- str in, str out -------------------------------------------------------------

    def search(self, text: str) -> Found | None:
        subject = Subject(text)
        span = self.find(subject)
        if span is None:
            return None
        start = subject.char_offset(span[0])
        matched = subject.slice(*span)
        return Found(start, start + len(matched), matched)

    def fullmatch(self, text: str) -> bool:
        return self._first.fullmatch(Subject(text).data) is not None

    def sub(self, replace: Callable[[str], str], text: str) -> str:
        """`text` with every match replaced by `replace(matched text)`."""
        subject = Subject(text)
        pieces: list[str] = []
        done = 0
        for match in self._first.finditer(subject.data):
            start, end = match.span()
            pieces += [subject.slice(done, start), replace(subject.slice(start, end))]
            done = end
        pieces.append(subject.slice(done, len(subject.data)))
        return "".join(pieces)


@lru_cache(maxsize=4096)
def compile_regex(pattern: str, *, ignore_case: bool = False) -> LinearRegex:
    """The compiled regex (cached); raises `RegexError` saying why it cannot be used."""
    return LinearRegex(pattern, ignore_case=ignore_case)


@lru_cache(maxsize=4096)
def compile_re2(pattern: str) -> LinearRegex:
    """A pattern already in RE2 syntax (one hakari composes), compiled and cached."""
    return LinearRegex(pattern, dialect="re2")


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be used, or None when it can."""
    try:
        compile_regex(pattern)
    except RegexError as exc:
        return str(exc)
    return None


def escape(text: str) -> str:
    """`text` as a regex that matches it literally (Python's `re.escape`, which RE2 and
    llguidance read the same way)."""
    return re.escape(text)

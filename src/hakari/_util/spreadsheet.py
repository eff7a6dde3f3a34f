"""The one rule for text cells of every CSV hakari writes (`hakari report --csv`,
`hakari export --format table`): a cell a spreadsheet would run as a formula, one starting
with `=`, `+`, `-`, `@`, a tab or a carriage return, gets a leading apostrophe (model
names, template ids, answers are untrusted text). A cell that itself starts with an
apostrophe gets one more, so `unescape_cell`, which `hakari import table` applies to
every CSV cell, gives back exactly the text written. Numbers are written as numbers.
"""

from __future__ import annotations

from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_QUOTE = "'"


def escape_cell(value: Any) -> Any:
    """`value` with an apostrophe before a formula's first character (text only)."""
    if isinstance(value, str) and value[:1] in (*FORMULA_START, _QUOTE):
        return _QUOTE + value
    return value


def unescape_cell(text: str) -> str:
    """What `escape_cell` wrote, back: one leading apostrophe removed where it escapes."""
    if text[:1] == _QUOTE and text[1:2] in (*FORMULA_START, _QUOTE) and len(text) > 1:
        return text[1:]
    return text

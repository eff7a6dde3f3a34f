"""Text that UTF-8 cannot encode: lone surrogates (U+D800 to U+DFFF).

Python strings can hold them, and untrusted text brings them in: a server's JSON answer
`"\\ud800"` is legal JSON and decodes to one, and so does a row of a user's JSONL file.
They fail every UTF-8 encoder (a file, SQLite, a tokenizer, a terminal). The one decision
a reader must know: **hakari keeps such text exactly where it is stored** (written as the
`\\uXXXX` escape, which in a JSON string is the very same text: `escaped`, and
`ESCAPE_ERRORS` for text files), **counts it** (`has_unencodable`), and gives models
and metrics the text with each such character replaced by U+FFFD (`replaced`), so that
no library downstream fails on it.
"""

from __future__ import annotations

import re

ESCAPE_ERRORS = "backslashreplace"  # codec error handler: a lone surrogate -> \\uXXXX
REPLACEMENT = "\ufffd"
_UNENCODABLE = re.compile("[\ud800-\udfff]")


def has_unencodable(text: str) -> bool:
    """Whether `text` holds a character UTF-8 cannot encode."""
    return _UNENCODABLE.search(text) is not None


def escaped(text: str) -> str:
    """`text` with each character UTF-8 cannot encode written as its `\\uXXXX` escape
    (valid text is returned unchanged; for JSON text the meaning is unchanged)."""
    if not has_unencodable(text):
        return text
    return text.encode("utf-8", ESCAPE_ERRORS).decode("utf-8")


def replaced(text: str) -> str:
    """`text` with each character UTF-8 cannot encode replaced by U+FFFD."""
    return _UNENCODABLE.sub(REPLACEMENT, text)

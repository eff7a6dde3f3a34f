"""Reading user JSONL files whose fields are named by dotted paths, with one clear error.

`hakari score --input` and `hakari meta` both read rows made elsewhere. Everything is
checked before any model loads or any statistic is computed: the file must be UTF-8,
every line one JSON object, and every named field present (a path such as
`metric_scores.rouge_1_f_score` walks nested objects; an integer part indexes a list).
An error names the file, the 1-based line and the field, so a problem in row 2,317 is
found in a second rather than after an hour of scoring.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hakari.errors import HakariInputError

Row = dict[str, Any]
_PATH_PART = re.compile(r"^[^.\s]+$")
_MISSING = object()
LINE_KEY = "\x00hakari-line"  # the 1-based line a row came from (no JSON key can clash)


def check_path(path: str, option: str) -> tuple[str, ...]:
    """Split a dotted path; reject empty parts (`a..b`, `.a`, `a.`) naming the option."""
    parts = tuple(path.split("."))
    if not path or any(not _PATH_PART.match(p) for p in parts):
        raise HakariInputError(
            f"{path!r} is not a field path (names joined by '.', e.g. metric_scores.rouge_1)",
            field=option,
        )
    return parts


def lookup(row: Row, parts: Sequence[str]) -> Any:
    """The value at `parts`, or `_MISSING` (a module sentinel) when absent."""
    value: Any = row
    for part in parts:
        if isinstance(value, dict):
            value = value.get(part, _MISSING)
        elif isinstance(value, list) and part.lstrip("-").isdigit():
            idx = int(part)
            value = value[idx] if -len(value) <= idx < len(value) else _MISSING
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def read_jsonl(path: Path) -> list[Row]:
    """Every row of a JSONL file (blank lines skipped); errors name the line."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise HakariInputError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    rows: list[Row] = []
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HakariInputError(
                f"line {lineno}: not UTF-8 (byte {exc.start}: {line[exc.start : exc.start + 1]!r})",
                file=str(path),
            ) from None
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HakariInputError(
                f"line {lineno}: not JSON ({exc.msg} at column {exc.colno})", file=str(path)
            ) from None
        if not isinstance(obj, dict):
            raise HakariInputError(
                f"line {lineno}: expected a JSON object, got {type(obj).__name__}",
                file=str(path),
            )
        obj[LINE_KEY] = lineno
        rows.append(obj)
    if not rows:
        raise HakariInputError("no rows", file=str(path))
    return rows


def row_line(row: Row) -> int:
    return int(row.get(LINE_KEY, 0))


def strip_line(row: Row) -> Row:
    """The row as the user wrote it (without the line number this module adds)."""
    return {k: v for k, v in row.items() if k != LINE_KEY}


def require(row: Row, path: str, parts: Sequence[str], file: Path, option: str) -> Any:
    value = lookup(row, parts)
    if value is _MISSING:
        raise HakariInputError(
            f"line {row_line(row)}: no field {path!r} (given by {option})", file=str(file)
        )
    return value


def text_column(
    rows: Sequence[Row], path: str, file: Path, option: str, *, allow_list: bool = False
) -> list[Any]:
    """A string field of every row (or a list of strings when `allow_list`)."""
    parts = check_path(path, option)
    out: list[Any] = []
    for row in rows:
        value = require(row, path, parts, file, option)
        ok = isinstance(value, str) or (
            allow_list
            and isinstance(value, list)
            and value
            and all(isinstance(v, str) for v in value)
        )
        if not ok:
            kind = "a string or a non-empty list of strings" if allow_list else "a string"
            raise HakariInputError(
                f"line {row_line(row)}: field {path!r} must be {kind}, got {type(value).__name__}",
                file=str(file),
            )
        out.append(value)
    return out


def number_column(rows: Sequence[Row], path: str, file: Path, option: str) -> list[float]:
    """A numeric field of every row; null and NaN become NaN (reported, never dropped)."""
    parts = check_path(path, option)
    out: list[float] = []
    for row in rows:
        value = require(row, path, parts, file, option)
        if value is None:
            out.append(math.nan)
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise HakariInputError(
                f"line {row_line(row)}: field {path!r} must be a number or null, "
                f"got {type(value).__name__} {str(value)[:40]!r}",
                file=str(file),
            )
        else:
            out.append(float(value))
    return out


def label_column(rows: Sequence[Row], path: str, file: Path, option: str) -> list[str]:
    """A grouping field (system, document, task): any scalar, compared as text."""
    parts = check_path(path, option)
    out: list[str] = []
    for row in rows:
        value = require(row, path, parts, file, option)
        if isinstance(value, dict | list) or value is None:
            raise HakariInputError(
                f"line {row_line(row)}: field {path!r} must be a string or number",
                file=str(file),
            )
        out.append(str(value))
    return out

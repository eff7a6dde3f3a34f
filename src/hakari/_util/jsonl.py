"""Reading JSON Lines files (`iter_jsonl`, the one reader) and user JSONL whose fields
are named by dotted paths, with one clear error.

`hakari score --input` and `hakari meta` both read rows made elsewhere. Everything is
checked before any model loads or any statistic is computed: the file must be UTF-8,
every line one JSON object, and every named field present (a path such as
`metric_scores.rouge_1_f_score` walks nested objects; an integer part indexes a list).
An error names the file, the 1-based line and the field, so a problem in row 2,317 is
found in a second rather than after an hour of scoring. An object that names a key twice
(`{"score": 1, "score": 0}`, which `json` reads as its last value) is an error too
(`loads_strict`, also for whole JSON documents).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from hakari._util.infiles import open_input
from hakari.errors import HakariInputError

Row = dict[str, Any]
_PATH_PART = re.compile(r"^[^.\s]+$")
_MISSING = object()
_BOM = b"\xef\xbb\xbf"
LINE_KEY = "\x00hakari-line"  # the 1-based line a row came from (no JSON key can clash)
MAX_LINE_BYTES = 64 << 20  # one JSON Lines row; a longer one is refused, not read on


class RepeatedKeyError(ValueError):
    """A JSON object that names one key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise RepeatedKeyError(f"the object names {key!r} twice (which one counts?)")
        obj[key] = value
    return obj


def loads_strict(text: str | bytes) -> Any:
    """`json.loads`, refusing an object with a repeated key (`RepeatedKeyError`)."""
    return json.loads(text, object_pairs_hook=_unique_keys)


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


def iter_jsonl(
    path: Path, *, data: bytes | None = None, field: str | None = None
) -> Iterator[tuple[int, Row]]:
    """(1-based line number, object) of every non-blank line of a JSON Lines file, read
    line by line (`data`: the file's bytes already in memory, e.g. decompressed).

    The one JSONL reader of hakari: every error is a `HakariInputError` naming the file,
    the line and, where given, the option that named the file (`field`): "line N: not
    UTF-8 text: byte 0x.. (...)", "line N: not valid JSON (<reason> at column C)", "line N:
    expected a JSON object, got <type>". A UTF-8 byte-order mark is skipped.
    """
    try:
        if data is None:
            with open_input(path, field=field) as fh:
                yield from _parse_lines(path, bounded_lines(fh, path, field), field)
            return
    except OSError as exc:
        raise HakariInputError(
            f"cannot read: {exc.strerror or exc}", file=str(path), field=field
        ) from None
    yield from _parse_lines(path, data.split(b"\n"), field)


def bounded_lines(
    fh: IO[Any], path: Path, field: str | None, kind: str = "a JSON Lines file"
) -> Iterator[Any]:
    """The lines of `fh` (binary or text), none longer than `MAX_LINE_BYTES`: a file
    without line breaks (or a link to /dev/zero) is one error after at most that many
    bytes, never a read without end. `kind` names what the file should have been."""
    for lineno in itertools.count(1):
        line = fh.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES:
            raise HakariInputError(
                f"line {lineno} is longer than {MAX_LINE_BYTES >> 20} MiB: not {kind}?",
                file=str(path),
                field=field,
            )
        yield line


def _parse_lines(
    path: Path, lines: Iterable[bytes], field: str | None
) -> Iterator[tuple[int, Row]]:
    for lineno, line in enumerate(lines, start=1):
        if lineno == 1 and line.startswith(_BOM):
            line = line[len(_BOM) :]
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HakariInputError(
                f"line {lineno}: not UTF-8 text: byte 0x{line[exc.start]:02x} (byte {exc.start} "
                "of the line); save the file as UTF-8",
                file=str(path),
                field=field,
            ) from None
        try:
            obj = loads_strict(text)
        except json.JSONDecodeError as exc:
            raise HakariInputError(
                f"line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})",
                file=str(path),
                field=field,
            ) from None
        except RepeatedKeyError as exc:
            raise HakariInputError(f"line {lineno}: {exc}", file=str(path), field=field) from None
        except RecursionError:  # json's C decoder recurses once per nesting level
            raise HakariInputError(
                f"line {lineno}: JSON nested too deeply to read", file=str(path), field=field
            ) from None
        if not isinstance(obj, dict):
            raise HakariInputError(
                f"line {lineno}: expected a JSON object, got {type(obj).__name__}",
                file=str(path),
                field=field,
            )
        yield lineno, obj


def read_jsonl(path: Path, *, field: str | None = None) -> list[Row]:
    """Every row of a JSONL file (blank lines skipped), each remembering its line
    (`row_line`); errors as `iter_jsonl`'s, and "no rows" for an empty file."""
    rows: list[Row] = []
    for lineno, obj in iter_jsonl(path, field=field):
        obj[LINE_KEY] = lineno
        rows.append(obj)
    if not rows:
        raise HakariInputError("no rows", file=str(path), field=field)
    return rows


def iter_jsonl_lenient(
    path: Path, *, keep: Callable[[str], bool] | None = None, field: str | None = None
) -> Iterator[Row]:
    """The objects of a JSON Lines file that a kill may have cut short (a run's
    samples.jsonl, a log this process or an earlier one appended to): a line that is not
    a whole UTF-8 JSON object is skipped, not an error. Lines are bounded as
    `iter_jsonl`'s (a longer one is a `HakariInputError`). `keep(text)`, when given, sees
    each line's text first: a line it refuses is not parsed (a cheap filter of long lines)."""
    with open_input(path, field=field) as fh:
        for raw in bounded_lines(fh, path, field):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if keep is not None and not keep(text):
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                yield obj


def read_jsonl_lenient(path: Path) -> list[Row]:
    """Every row `iter_jsonl_lenient` reads; a missing file has no rows."""
    try:
        return list(iter_jsonl_lenient(path))
    except FileNotFoundError:
        return []


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
    """A numeric field of every row; null and NaN become NaN (reported, never dropped).
    An infinite number (`1e309` reads as infinity, `Infinity`) is an error: it is no
    score, and left in it would turn every statistic it enters into NaN or infinity."""
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
        elif math.isinf(value):
            raise HakariInputError(
                f"line {row_line(row)}: field {path!r} is not a finite number (a literal "
                "beyond ±1.8e308, such as 1e309, reads as infinity); give a finite number "
                "or null",
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

"""The one way hakari writes a file that a reader must see whole or not at all.

Policy (the same for every output): the content goes to a temporary file of this process
in the target's folder (`.<name>.<pid>-<random>.tmp`, so two writers never share one), is
flushed and fsynced, and is then renamed over the target. A crash or a kill at any point
leaves either the old file or the new one, never a torn one, and no temporary file stays
behind after an error in this process. The folder itself is not fsynced: after a power
loss the rename may be lost, never the file's content.

Errors are `OSError` as the system reports them; commands turn them into one line naming
the file and the option.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Literal, overload


def temporary_sibling(path: Path) -> Path:
    """A name in `path`'s folder that no other writer uses."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


@overload
@contextmanager
def atomic_open(path: Path, mode: Literal["w"] = "w") -> Iterator[IO[str]]: ...
@overload
@contextmanager
def atomic_open(path: Path, mode: Literal["wb"]) -> Iterator[IO[bytes]]: ...
@contextmanager
def atomic_open(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """A file to write `path` through: published by a rename when the block ends without
    an exception, removed when it raises."""
    tmp = temporary_sibling(path)
    try:
        encoding = None if "b" in mode else "utf-8"
        with open(tmp, mode, encoding=encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_open(path) as fh:
        fh.write(text)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    with atomic_open(path, "wb") as fh:
        fh.write(data)


def write_json_atomic(path: Path, data: Any, *, trailing_newline: bool = False) -> None:
    """JSON with indent 2, non-ASCII kept as it is."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    write_text_atomic(path, text + ("\n" if trailing_newline else ""))


def write_jsonl_atomic(path: Path, rows: Iterable[Any]) -> int:
    """One JSON object a line; returns how many lines were written."""
    count = 0
    with atomic_open(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count

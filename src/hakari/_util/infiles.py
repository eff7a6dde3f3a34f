"""The one way hakari opens a file it was given to read: task data under `--data-dir`, a
task file, a run's results.json and samples.jsonl, imported results, pfgen-bench trials,
a judge's prompt file, an adapter's config.

`open_input` opens without blocking and refuses whatever is not a regular file (after
links): the open of a FIFO waits for a writer for ever, a device (`/dev/zero`,
`/dev/stdin`, a terminal) never ends or waits on a person, a socket cannot be opened.
Each is one `HakariInputError` naming the file, never a hang. `limit` (bytes), where a
caller knows how large such a file can be, refuses a larger one before it is read (a
sparse file of zeros costs no disk and, read whole, fills the memory). Errors of the open
itself (`FileNotFoundError`, `PermissionError`, ...) are raised as they are, for the
caller's own words. The file comes back in blocking mode, as `open` would give it.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import BinaryIO, TextIO

from hakari.errors import HakariInputError

# Not on every platform (Windows has no FIFOs to wait on).
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def open_input(path: Path, *, field: str | None = None, limit: int | None = None) -> BinaryIO:
    """`path` open for reading in binary, or `HakariInputError` if it is not a regular file
    (or is larger than `limit` bytes)."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise HakariInputError(
                f"not a regular file ({_kind(info.st_mode)}): hakari reads only files",
                file=str(path),
                field=field,
            )
        if limit is not None and info.st_size > limit:
            raise HakariInputError(
                f"{info.st_size:,} bytes, larger than the {_size(limit)} such a file can be",
                file=str(path),
                field=field,
            )
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_input_text(
    path: Path,
    *,
    encoding: str = "utf-8",
    newline: str | None = None,
    field: str | None = None,
    limit: int | None = None,
) -> TextIO:
    """`open_input` as text, as `path.open(encoding=..., newline=...)` reads it."""
    raw = open_input(path, field=field, limit=limit)
    return io.TextIOWrapper(raw, encoding=encoding, newline=newline)


def read_input(path: Path, *, field: str | None = None, limit: int | None = None) -> bytes:
    """The whole of `path`, as `path.read_bytes()`, through `open_input`."""
    with open_input(path, field=field, limit=limit) as fh:
        return fh.read()


def read_input_text(
    path: Path, *, encoding: str = "utf-8", field: str | None = None, limit: int | None = None
) -> str:
    """The whole of `path` as text, as `path.read_text(encoding)` (universal newlines)."""
    with open_input_text(path, encoding=encoding, field=field, limit=limit) as fh:
        return fh.read()


def _size(n_bytes: int) -> str:
    return f"{n_bytes >> 20} MiB" if n_bytes >= 1 << 20 else f"{n_bytes:,} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "another kind of file"

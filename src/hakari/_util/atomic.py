"""The one way hakari writes a file: whole or not at all, and never over what it must not
replace.

What may be written is decided by `hakari._util.outputs` (`check_output`, which every
command calls for each output it was given before it does any work, and
`check_output_folder` for output folders); its names are importable from here too, since
every caller of a writer needs them.

How (`atomic_open` and the `write_*` functions): a regular file is written to a temporary
file of this process in the target's folder (`.<name>.<pid>-<random>.tmp`, so two
writers never share one), flushed, fsynced and renamed over the target; a crash or a kill
leaves the old file or the new one, never a torn one, and an error leaves no temporary
file. `StagedFile` is the same in two steps, for outputs published together (a run's
results.json with its samples.jsonl). A folder is built the same way (`staged_folder`: a
temporary sibling renamed into place; `staged_files`: files renamed into a folder one by
one). The folder itself is not fsynced: after a power
loss the rename may be lost, never the file's content.

Text is UTF-8, lines end in "\\n" as written. A character UTF-8 cannot encode (a lone
surrogate: JSON's "\\ud800" decodes to one, and model output and user files are
untrusted) is written as its `\\uXXXX` escape (`hakari._util.unicode`), which in a
JSON string is the very same text: no answer is altered or lost, and no write fails on
it.

Every failure (a full disk, a read-only folder, a refused target) is one
`HakariInputError` naming the file and, where given, the option that named it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any, Literal, cast, overload

from hakari._util.outputs import ANALYSIS_FILE as ANALYSIS_FILE
from hakari._util.outputs import RESULTS_FILE as RESULTS_FILE
from hakari._util.outputs import RUN_FILES as RUN_FILES
from hakari._util.outputs import SAMPLES_FILE as SAMPLES_FILE
from hakari._util.outputs import Output as Output
from hakari._util.outputs import PathLike as PathLike
from hakari._util.outputs import WriteError as WriteError
from hakari._util.outputs import as_output, destination, refused
from hakari._util.outputs import check_output as check_output
from hakari._util.outputs import check_output_folder as check_output_folder
from hakari._util.unicode import ESCAPE_ERRORS


def temporary_sibling(path: Path, suffix: str = ".tmp") -> Path:
    """A name in `path`'s folder that no other writer uses."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{suffix}")


@contextmanager
def staged_folder(
    target: Path, *, complete: Callable[[Path], bool] = lambda _: False
) -> Iterator[Path]:
    """A folder to build `target` in: a temporary sibling, renamed to `target` when the
    block ends without an error and removed in every case, so a reader sees the old folder
    or the new one, never a half-built one. Where `target` exists, `complete(target)` says
    whether to keep it (another process published a complete one first) or replace it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = temporary_sibling(target)
    staging.mkdir()
    try:
        yield staging
        try:
            os.rename(staging, target)
        except OSError:
            if complete(target):
                return
            stale = temporary_sibling(target, ".stale")
            with suppress(FileNotFoundError):
                os.rename(target, stale)
            shutil.rmtree(stale, ignore_errors=True)
            os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def staged_files(folder: Path) -> Iterator[Path]:
    """A temporary folder inside `folder` to write files in; when the block ends without an
    error each file is renamed into `folder` (whole, over the file of its name), for a
    folder that holds other things too. The temporary folder is removed in every case."""
    staging = temporary_sibling(folder / "staged")
    staging.mkdir(parents=True)
    try:
        yield staging
        for path in sorted(staging.iterdir()):
            if path.is_file():
                os.replace(path, folder / path.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _open(path: Path, mode: str, *, exclusive: bool = False) -> IO[Any]:
    mode = mode.replace("w", "x") if exclusive else mode
    if "b" in mode:
        return open(path, mode)
    return open(path, mode, encoding="utf-8", errors=ESCAPE_ERRORS, newline="")


def _open_stream(where: Path, mode: str) -> IO[Any]:
    """A device, a pipe or an open file of this process (`/dev/stdout`): the descriptor
    itself where it is ours (written after what was printed, nothing truncated)."""
    own = {"self", "thread-self", str(os.getpid())}
    parts = where.parts
    if len(parts) >= 5 and parts[1] == "proc" and parts[2] in own and where.name.isdigit():
        descriptor = int(where.name)
        if descriptor in (1, 2):
            (sys.stdout if descriptor == 1 else sys.stderr).flush()
        fd = os.dup(descriptor)
        if "b" in mode:
            return os.fdopen(fd, mode)
        return os.fdopen(fd, mode, encoding="utf-8", errors=ESCAPE_ERRORS, newline="")
    return _open(where, mode)


class _Guarded:
    """A file whose write errors name the output (other errors of the caller's code
    inside the `with` block pass through as they are)."""

    def __init__(self, file: IO[Any], out: Output) -> None:
        self._file = file
        self._out = out

    def write(self, data: Any) -> int:
        try:
            return self._file.write(data)
        except OSError as exc:
            raise WriteError(self._out, exc) from None

    def writelines(self, lines: Iterable[Any]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


class StagedFile:
    """A file written now to a temporary sibling of its target and put in place later by
    `publish` (or dropped by `discard`): for outputs that must appear together."""

    def __init__(self, target: PathLike | Output, mode: str = "w", *, suffix: str = ".tmp") -> None:
        self.output = as_output(target)
        self.target = self._checked(self.output)
        self.temporary = temporary_sibling(self.target, suffix)
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self.file: IO[Any] = _open(self.temporary, mode, exclusive=True)
        except OSError as exc:
            raise WriteError(self.output, exc) from None

    @staticmethod
    def _checked(output: Output) -> Path:
        where, kind = destination(output)
        if kind == "stream":
            raise refused(output, "is a device or a pipe, not a file that can be staged")
        return where

    def retarget(self, target: PathLike | Output) -> None:
        """Publish to `target` instead (in a folder of the same file system)."""
        output = as_output(target)
        where = self._checked(output)
        try:
            where.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WriteError(output, exc) from None
        self.output, self.target = output, where

    def write(self, data: Any) -> None:
        try:
            self.file.write(data)
        except OSError as exc:
            raise WriteError(self.output, exc) from None

    def close(self) -> None:
        """Flush and fsync the content (the file can be published afterwards)."""
        if self.file.closed:
            return
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
        except OSError as exc:
            raise WriteError(self.output, exc) from None

    def publish(self) -> Path:
        """Put the content in place (the temporary file is gone afterwards, either way)."""
        try:
            self.close()
            os.replace(self.temporary, self.target)
        except OSError as exc:
            raise WriteError(self.output, exc) from None
        finally:
            self.discard()
        return self.target

    def discard(self) -> None:
        if not self.file.closed:
            with suppress(OSError):
                self.file.close()
        with suppress(OSError):
            self.temporary.unlink(missing_ok=True)


def publish_together(files: Sequence[StagedFile]) -> None:
    """Every file's content is complete on disk before the first rename: a full disk or
    a failed fsync leaves every target as it was (only the renames, which need no space,
    come after). Should a rename still fail after others succeeded (a target that cannot
    be replaced, such as an immutable file), the targets already replaced get their old
    content back (kept as hard links until every rename is done): the set is the old one
    or the new one, never a mix. No temporary file is left, whatever fails."""
    done: list[tuple[Path, bool, Path | None]] = []  # target, existed, its old content
    try:
        for staged in files:
            staged.close()
        for staged in files:
            existed, old = _keep_old(staged.target)
            try:
                staged.publish()
            except BaseException:
                if old is not None:
                    old.unlink(missing_ok=True)
                raise
            done.append((staged.target, existed, old))
    except BaseException:
        for target, existed, old in reversed(done):
            with suppress(OSError):
                if old is not None:
                    os.replace(old, target)
                elif not existed:
                    target.unlink()
        raise
    finally:
        for staged in files:
            staged.discard()
        for _, _, old in done:
            if old is not None:
                with suppress(OSError):
                    old.unlink(missing_ok=True)


def _keep_old(target: Path) -> tuple[bool, Path | None]:
    """Whether `target` exists, and a hard link to its current content (None where it
    does not exist or the file system takes no hard links)."""
    if not target.is_file():
        return target.exists(), None
    old = temporary_sibling(target, ".old")
    try:
        os.link(target, old)
    except OSError:
        return True, None
    return True, old


@overload
@contextmanager
def atomic_open(path: PathLike | Output, mode: Literal["w"] = "w") -> Iterator[IO[str]]: ...
@overload
@contextmanager
def atomic_open(path: PathLike | Output, mode: Literal["wb"]) -> Iterator[IO[bytes]]: ...
@contextmanager
def atomic_open(path: PathLike | Output, mode: str = "w") -> Iterator[IO[Any]]:
    """A file to write `path` through: published when the block ends without an
    exception (a rename, or in place for a device), dropped when it raises."""
    out = as_output(path)
    where, kind = destination(out)
    if kind == "stream":
        try:
            stream = _open_stream(where, mode)
        except OSError as exc:
            raise WriteError(out, exc) from None
        try:
            yield cast(IO[Any], _Guarded(stream, out))
        except BaseException:
            with suppress(OSError):
                stream.close()
            raise
        try:
            stream.close()
        except OSError as exc:
            raise WriteError(out, exc) from None
        return
    staged = StagedFile(out, mode)
    try:
        yield cast(IO[Any], _Guarded(staged.file, out))
    except BaseException:
        staged.discard()
        raise
    staged.publish()


def write_text_atomic(path: PathLike | Output, text: str) -> None:
    with atomic_open(path) as fh:
        fh.write(text)


def write_bytes_atomic(path: PathLike | Output, data: bytes) -> None:
    with atomic_open(path, "wb") as fh:
        fh.write(data)


def json_text(data: Any, *, trailing_newline: bool = False) -> str:
    """How hakari writes a JSON file: indent 2, non-ASCII kept as it is."""
    return json.dumps(data, indent=2, ensure_ascii=False) + ("\n" if trailing_newline else "")


def write_json_atomic(
    path: PathLike | Output, data: Any, *, trailing_newline: bool = False
) -> None:
    """A JSON file (`json_text`)."""
    write_text_atomic(path, json_text(data, trailing_newline=trailing_newline))


def json_line(row: Any) -> str:
    """One JSON Lines line (newline included), non-ASCII kept as it is."""
    return json.dumps(row, ensure_ascii=False) + "\n"


def write_jsonl_atomic(path: PathLike | Output, rows: Iterable[Any]) -> int:
    """One JSON object a line; returns how many lines were written."""
    count = 0
    with atomic_open(path) as fh:
        for row in rows:
            fh.write(json_line(row))
            count += 1
    return count

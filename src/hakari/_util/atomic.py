"""The one way hakari writes a file: whole or not at all, and never over what it must not
replace.

What may be written (`check_output`, which every command calls for each output it was
given before it does any work, and `check_output_folder` for output folders):

* a regular file, or a new one in a folder that exists or can be made;
* a symbolic link is written through: its target gets the content, the link stays;
* a character device or a pipe (`/dev/stdout`, `/dev/null`, `/dev/full`, `/dev/fd/N`) is
  written in place, without a temporary file or a rename;
* refused with one line: a folder, a socket, a block device, one of the command's own
  input files, and a run folder's own files (`RUN_FILES`: results.json, samples.jsonl,
  analysis.json, in a folder that holds a results.json) unless the command owns that run
  (`owner=True`: `hakari run`, `score RUN`, `analyze RUN`, under the run folder's lock).

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
import re
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, cast, overload

from hakari._util.unicode import ESCAPE_ERRORS
from hakari.errors import HakariInputError

RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"
ANALYSIS_FILE = "analysis.json"
# What only the command that owns a run writes, in a folder holding a results.json.
RUN_FILES = frozenset({RESULTS_FILE, SAMPLES_FILE, ANALYSIS_FILE})

_FD_FOLDER = re.compile(r"^/proc/[^/]+/(task/[^/]+/)?fd$")  # /dev/fd, /proc/self/fd
_MAX_LINKS = 40

Kind = Literal["file", "new", "stream"]
PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Output:
    """An output a command was given, checked by `check_output`: pass it to the writers so
    that errors name the option, and the checks run again when the file is written."""

    path: Path
    option: str | None = None
    inputs: tuple[Path, ...] = ()
    owner: bool = False


def check_output(
    path: PathLike | Output,
    option: str | None = None,
    *,
    inputs: Iterable[PathLike] = (),
    owner: bool = False,
) -> Output:
    """`path` as an `Output`, or one `HakariInputError` naming the file and `option` when
    it must not be written (see the module docstring). Call it before any work."""
    out = (
        path
        if isinstance(path, Output)
        else Output(Path(path), option, tuple(Path(p) for p in inputs), owner)
    )
    _destination(out)
    return out


def check_output_folder(
    path: PathLike, option: str | None = None, *, inputs: Iterable[PathLike] = ()
) -> Path:
    """A folder a command writes files into: absent (it will be made) or a folder, and not
    one of the command's input folders (check each file it writes with `check_output`
    too)."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise HakariInputError("exists and is not a folder", file=str(folder), field=option)
    # the folder itself where it exists, else the nearest folder above it
    _check_parents(folder, Path(os.path.abspath(folder)) / "file", option)
    for given in inputs:
        if _same_file(Path(os.path.realpath(folder)), Path(given)):
            raise HakariInputError(
                f"is the input folder {given}: the command would write over its own input; "
                "choose another folder",
                file=str(folder),
                field=option,
            )
    return folder


def _destination(out: Output) -> tuple[Path, Kind]:
    """Where the bytes of `out` go and how (see the module docstring), or the refusal."""
    where, through_fd = _resolve(out.path, out.option)
    if through_fd:
        return where, "stream"
    try:
        mode = os.stat(where).st_mode
    except (FileNotFoundError, NotADirectoryError):
        kind: Kind = "new"
    except OSError as exc:
        raise WriteError(out, exc) from None
    else:
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            return where, "stream"
        if stat.S_ISDIR(mode):
            raise _refused(out, "is a folder; give a file name")
        if not stat.S_ISREG(mode):
            raise _refused(out, "is not a regular file (a socket or a block device)")
        kind = "file"
    _check_parents(out.path, where, out.option)
    for given in out.inputs:
        if _same_file(where, given):
            raise _refused(out, f"is the input {given}: the command would write over its own input")
    if not out.owner and where.name in RUN_FILES and (where.parent / RESULTS_FILE).is_file():
        raise _refused(
            out,
            f"is a run's {where.name}, which only the run's own commands (run, score, "
            "analyze) write; choose another file",
        )
    return where, kind


def _resolve(path: Path, option: str | None) -> tuple[Path, bool]:
    """The path after every symbolic link, and whether it is one of this process's open
    files (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`: written in place as they are)."""
    current = Path(os.path.abspath(path))
    for _ in range(_MAX_LINKS):
        if current.name in ("", ".", ".."):
            current = Path(os.path.realpath(current))
        folder = Path(os.path.realpath(current.parent))
        if _FD_FOLDER.match(str(folder)):
            return current, True
        current = folder / current.name
        if not current.is_symlink():
            return current, False
        current = folder / os.readlink(current)
    raise HakariInputError("too many levels of symbolic links", file=str(path), field=option)


def _check_parents(given: Path, where: Path, option: str | None) -> None:
    """The nearest existing folder above `where` is a folder this process can write."""
    parent = where.parent
    while not parent.exists():
        if parent.is_symlink():
            raise HakariInputError(
                f"{parent} is a broken symbolic link", file=str(given), field=option
            )
        parent = parent.parent
    if not parent.is_dir():
        raise HakariInputError(f"{parent} is not a folder", file=str(given), field=option)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise HakariInputError(
            f"the folder {parent} cannot be written (permission denied)",
            file=str(given),
            field=option,
        )


def _same_file(where: Path, given: Path) -> bool:
    try:
        return os.path.samefile(where, given)
    except OSError:
        return where == Path(os.path.realpath(given))


def _as_output(target: PathLike | Output) -> Output:
    return target if isinstance(target, Output) else Output(Path(target), owner=True)


def _refused(out: Output, why: str) -> HakariInputError:
    return HakariInputError(why, file=str(out.path), field=out.option)


class WriteError(HakariInputError):
    """The system refused a write (`problem`: its reason, e.g. "No space left on device")."""

    def __init__(self, out: Output, exc: OSError) -> None:
        self.problem = exc.strerror or str(exc)
        super().__init__(f"cannot write: {self.problem}", file=str(out.path), field=out.option)


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
        self.output = _as_output(target)
        self.target = self._checked(self.output)
        self.temporary = temporary_sibling(self.target, suffix)
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self.file: IO[Any] = _open(self.temporary, mode, exclusive=True)
        except OSError as exc:
            raise WriteError(self.output, exc) from None

    @staticmethod
    def _checked(output: Output) -> Path:
        where, kind = _destination(output)
        if kind == "stream":
            raise _refused(output, "is a device or a pipe, not a file that can be staged")
        return where

    def retarget(self, target: PathLike | Output) -> None:
        """Publish to `target` instead (in a folder of the same file system)."""
        output = _as_output(target)
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
    out = _as_output(path)
    where, kind = _destination(out)
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

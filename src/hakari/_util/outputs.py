"""What a command may write, checked before it does any work (`check_output` for each
output it was given, `check_output_folder` for output folders); `hakari._util.atomic`
writes what passed.

* a regular file, or a new one in a folder that exists or can be made;
* a symbolic link is written through: its target gets the content, the link stays;
* a character device or a pipe (`/dev/stdout`, `/dev/null`, `/dev/full`, `/dev/fd/N`) is
  written in place, without a temporary file or a rename;
* refused with one line: a folder, a socket, a block device, one of the command's own
  input files, and a run folder's own files (`RUN_FILES`: results.json, samples.jsonl,
  analysis.json, in a folder that holds a results.json) unless the command owns that run
  (`owner=True`: `hakari run`, `score RUN`, `analyze RUN`, under the run folder's lock).

Every refusal, and every write the system refuses (`WriteError`), is one
`HakariInputError` naming the file and, where given, the option that named it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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
    in_given_folder: bool = False,
) -> Output:
    """`path` as an `Output`, or one `HakariInputError` naming the file and `option` when
    it must not be written (see the module docstring). Call it before any work.

    A missing folder above the file is made only inside the working folder, or where it
    is the folder the option named (`in_given_folder`: `--csv DIR`): `--json
    /nonexistent/x.json` is a typo, and must not make a folder at the file system root."""
    out = (
        path
        if isinstance(path, Output)
        else Output(Path(path), option, tuple(Path(p) for p in inputs), owner)
    )
    where, kind = destination(out)
    if kind != "stream":
        _check_new_folders(out, where.parent.parent if in_given_folder else where.parent)
    return out


def _check_new_folders(out: Output, folder: Path) -> None:
    """`folder` exists, or the folders to make lie inside the working folder."""
    if folder.is_dir():
        return
    cwd = Path(os.path.realpath(os.getcwd()))
    if folder == cwd or cwd in folder.parents:
        return
    raise refused(
        out,
        f"the folder {folder} does not exist (hakari makes missing folders only inside the "
        "working folder); create it first",
    )


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


def destination(out: Output) -> tuple[Path, Kind]:
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
            raise refused(out, "is a folder; give a file name")
        if not stat.S_ISREG(mode):
            raise refused(out, "is not a regular file (a socket or a block device)")
        kind = "file"
    _check_parents(out.path, where, out.option)
    for given in out.inputs:
        if _same_file(where, given):
            raise refused(out, f"is the input {given}: the command would write over its own input")
    if not out.owner and where.name in RUN_FILES and (where.parent / RESULTS_FILE).is_file():
        raise refused(
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


def as_output(target: PathLike | Output) -> Output:
    return target if isinstance(target, Output) else Output(Path(target), owner=True)


def refused(out: Output, why: str) -> HakariInputError:
    return HakariInputError(why, file=str(out.path), field=out.option)


class WriteError(HakariInputError):
    """The system refused a write (`problem`: its reason, e.g. "No space left on device")."""

    def __init__(self, out: Output, exc: OSError) -> None:
        self.problem = exc.strerror or str(exc)
        super().__init__(f"cannot write: {self.problem}", file=str(out.path), field=out.option)

"""The run folder: results.json and samples.jsonl, always a matching pair, written by one
command at a time.

* `new_run_dir` gives every run its own folder (`runs/<time>-<random>`, created
  exclusively), so two runs started in the same second never share one.
* `RunFolderLock`: every command that writes into a run folder (`hakari run --output`,
  `score RUN`, `analyze RUN`) holds the folder's lock from before any model loads until
  its files are published. A second one is refused at once (one line, exit 2) instead of
  waiting behind a run that may take hours: two runs given the same `--output` can never
  both "succeed" into one folder, and two `score RUN` never interleave their writes.
* `RunWriter` streams samples to a hidden temporary file of its own and publishes
  `samples.jsonl` and `results.json` together at the end (`hakari._util.atomic`: both
  complete on disk before the first rename). When a model fails, the samples of that
  model are dropped and the finished models are published (see `pipeline.evaluate`):
  into the folder when it holds no results yet, else beside the previous pair, in its
  `partial/` subfolder, because a failed rerun leaves the previous pair untouched.

The folder is derived data (the response cache is the state): a rerun of the same
command rebuilds it from the cache. So a folder that cannot be written at the end (it
became read-only, the disk is full) costs no answer: the error says so and how to
publish them.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from hakari._util.atomic import (
    RESULTS_FILE,
    RUN_FILES,
    SAMPLES_FILE,
    Output,
    StagedFile,
    WriteError,
    json_line,
    publish_together,
)
from hakari.errors import HakariInputError
from hakari.results import EvalResults

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no folder lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["PARTIAL_FOLDER", "RESULTS_FILE", "RUNS_ROOT", "SAMPLES_FILE", "RunWriter"]

PARTIAL_FOLDER = "partial"  # a failed rerun's finished models, beside the previous pair
RUNS_ROOT = Path("runs")  # where `hakari run` makes a new folder when --output is not given
_PARTIAL_SUFFIX = ".partial"

Mark = tuple[int, int]  # (bytes, samples) written so far


def new_run_dir(root: Path) -> Path:
    """A fresh folder `root/<YYYYmmdd-HHMMSS>-<6 hex>`, created exclusively."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        root.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            folder = root / f"{stamp}-{secrets.token_hex(3)}"
            try:
                folder.mkdir()
            except FileExistsError:
                continue
            return folder
    except OSError as exc:
        raise HakariInputError(
            f"cannot create a run folder: {exc.strerror or exc}", file=str(root), field="--output"
        ) from None
    raise HakariInputError("cannot create a unique run folder", file=str(root), field="--output")


def open_writer(
    out_dir: Path | None, new_run_under: str | Path | None, *, use_cache: bool
) -> RunWriter | None:
    """The run's writer: into `out_dir`, or a new folder under `new_run_under`, or none."""
    created = out_dir is None and new_run_under is not None
    if created:
        out_dir = new_run_dir(Path(new_run_under))  # type: ignore[arg-type]
    if out_dir is None:
        return None
    return RunWriter(out_dir, created=created, recovery=_recovery(use_cache))


def _recovery(use_cache: bool) -> str:
    """What a user can do when the run folder cannot be written at the end."""
    if not use_cache:
        return "this run used --no-cache, so its answers are lost"
    return (
        "every answer is in the response cache: run the same command again once the "
        "folder can be written (or with another --output) to publish them without "
        "generating them again"
    )


class RunFolderLock:
    """The exclusive lock of one run folder (an `flock` on the folder itself, released
    when this process lets it go or ends, a kill included)."""

    def __init__(self, folder: Path, field: str | None = None) -> None:
        self.folder = folder
        self._fd: int | None = None
        if fcntl is None:  # pragma: no cover - not POSIX
            return
        try:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as exc:
            raise HakariInputError(
                f"cannot open the run folder: {exc.strerror or exc}", file=str(folder), field=field
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise HakariInputError(
                "another hakari command (run, import, score or analyze) is writing this run folder "
                "now; wait for it to finish, or give another folder",
                file=str(folder),
                field=field,
            ) from None
        except OSError:  # pragma: no cover - a file system without locks (some NFS)
            os.close(fd)
            return
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None


@contextmanager
def locked_run_folder(folder: Path, field: str | None = None) -> Iterator[RunFolderLock]:
    """Hold `folder`'s lock for the block (`score RUN`, `analyze RUN`)."""
    lock = RunFolderLock(folder, field)
    try:
        yield lock
    finally:
        lock.release()


class RunWriter:
    """samples.jsonl written as the run goes (to a temporary file), published with
    results.json by `publish`. Opening it takes the folder's lock and proves the folder
    is writable, before any model loads; `release` (always) lets the lock go.

    `recovery`: what the user can do when the folder cannot be written at the end (said
    in the error), e.g. that every answer is cached and the same command publishes them.
    """

    def __init__(self, folder: Path, *, created: bool = False, recovery: str = "") -> None:
        self.folder = folder
        self.created = created  # made for this run: removed again if nothing is published
        self.recovery = recovery
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error(exc.strerror or str(exc)) from None
        self._lock = RunFolderLock(folder, "--output")
        try:
            # A rerun that fails publishes beside a pair that is already there.
            self.previous_pair = (folder / RESULTS_FILE).is_file()
            target = Output(folder / SAMPLES_FILE, "--output", owner=True)
            self._samples = StagedFile(target, suffix=_PARTIAL_SUFFIX)
        except HakariInputError as exc:
            self._lock.release()
            raise self._error(_problem(exc)) from None
        except BaseException:
            self._lock.release()
            raise
        self.n_samples = 0
        self._broken: str | None = None  # why the samples file cannot be trusted
        _remove_stale_partials(folder, keep=self._samples.temporary)

    def _error(self, problem: str, *, when: str = "write") -> HakariInputError:
        message = f"cannot {when} the run folder: {problem}"
        if self.recovery:
            message += f"; {self.recovery}"
        return HakariInputError(message, file=str(self.folder), field="--output")

    def write_sample(self, record: dict[str, Any]) -> None:
        try:
            self._samples.write(json_line(record))
        except HakariInputError as exc:
            self._broken = _problem(exc)
            raise self._error(self._broken) from None
        self.n_samples += 1

    def mark(self) -> Mark:
        """A point of the samples written so far (before and after a model's round)."""
        if self._broken is not None:
            return 0, self.n_samples
        self._samples.file.flush()
        return self._samples.file.tell(), self.n_samples

    def drop(self, spans: list[tuple[Mark, Mark]]) -> None:
        """Drop the samples between each pair of marks (a failed model's samples, which
        lie in one span per round it ran): the rest moves up in place."""
        spans = sorted(spans)
        if not spans:
            return
        try:
            file = self._samples.file
            file.flush()
            end = file.tell()
            write_at, dropped = spans[0][0][0], 0
            with open(self._samples.temporary, "r+b") as raw:
                for i, ((_, n_start), (stop, n_stop)) in enumerate(spans):
                    dropped += n_stop - n_start
                    keep_until = spans[i + 1][0][0] if i + 1 < len(spans) else end
                    write_at = _move(raw, stop, keep_until, write_at)
                raw.truncate(write_at)
            file.seek(write_at)
        except (OSError, ValueError) as exc:
            self._broken = self._broken or str(exc)
            return
        self.n_samples -= dropped

    def destination(self, results: EvalResults) -> Path:
        """Where `publish` puts this run's pair: the folder, or its `partial/` subfolder
        when models failed and the folder already holds a pair (left untouched)."""
        if results.failed and self.previous_pair:
            return self.folder / PARTIAL_FOLDER
        return self.folder

    def publish(self, results: EvalResults) -> Path:
        """Put this run's results.json and samples.jsonl in place, together (see
        `destination`); returns the results.json written. The lock is released."""
        try:
            if self._broken is not None:
                raise self._error(self._broken)
            folder = self.destination(results)
            results.output_dir = str(folder)
            results.n_samples = self.n_samples
            try:
                if folder != self.folder:
                    self._samples.retarget(Output(folder / SAMPLES_FILE, "--output", owner=True))
                staged = StagedFile(Output(folder / RESULTS_FILE, "--output", owner=True))
                staged.write(results.file_text())  # without credentials
                publish_together([self._samples, staged])
            except HakariInputError as exc:
                self._samples.discard()
                raise self._error(_problem(exc), when="publish") from None
            return folder / RESULTS_FILE
        finally:
            self.release()

    def discard(self) -> None:
        """Leave the folder as it was before the run (nothing of this run is kept)."""
        self._samples.discard()
        try:
            if self.created and not any(self.folder.iterdir()):
                self.folder.rmdir()
        except OSError:
            pass  # an empty folder left behind
        self.release()

    def release(self) -> None:
        """Let the folder's lock go (idempotent)."""
        self._lock.release()


def _move(raw: Any, start: int, stop: int, to: int) -> int:
    """Copy bytes [start, stop) of `raw` to `to` (to <= start); returns where they end."""
    while start < stop:
        raw.seek(start)
        block = raw.read(min(1 << 20, stop - start))
        raw.seek(to)
        raw.write(block)
        start += len(block)
        to += len(block)
    return to


def _problem(exc: HakariInputError) -> str:
    return exc.problem if isinstance(exc, WriteError) else exc.detail


def _remove_stale_partials(folder: Path, keep: Path) -> None:
    """Delete the temporary files of commands that were killed while writing this folder
    (under its lock no other command is writing it)."""
    stale = [
        *folder.glob(f".{SAMPLES_FILE}.*{_PARTIAL_SUFFIX}"),
        *(p for name in RUN_FILES for p in folder.glob(f".{name}.*.tmp")),
    ]
    for path in stale:
        if path.name != keep.name:
            with suppress(OSError):
                path.unlink()

"""The run folder: results.json and samples.jsonl, always a matching pair.

* `new_run_dir` gives every run its own folder (`runs/<time>-<random>`, created
  exclusively), so two runs started in the same second never share one.
* `RunWriter` streams samples to a hidden temporary file of its own (a run never writes
  into another run's file) and publishes `samples.jsonl` and `results.json` together at
  the end, under a lock on the folder, so a rerun that fails leaves the previous pair as
  it was. When a model fails, the samples of that model are dropped and the finished
  models are published (see `pipeline.evaluate`).

The folder is derived data (the response cache is the state): a rerun of the same
command rebuilds it from the cache.
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import datetime
from pathlib import Path
from typing import Any

from hakari.errors import HakariInputError
from hakari.results import EvalResults

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: publish without the folder lock
    fcntl = None  # type: ignore[assignment]

RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"
RUNS_ROOT = Path("runs")  # where `hakari run` makes a new folder when --output is not given


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


class RunWriter:
    """samples.jsonl written as the run goes (to a temporary file), published with
    results.json by `publish`. Opening it proves the folder is writable."""

    def __init__(self, folder: Path, *, created: bool = False) -> None:
        self.folder = folder
        self.created = created  # made for this run: removed again if nothing is published
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._tmp = folder / f".{SAMPLES_FILE}.{os.getpid()}-{secrets.token_hex(4)}.partial"
            self._fh = self._tmp.open("x", encoding="utf-8")
        except OSError as exc:
            raise HakariInputError(
                f"cannot write the run folder: {exc.strerror or exc}",
                file=str(folder),
                field="--output",
            ) from None
        self.n_samples = 0
        _remove_stale_partials(folder, keep=self._tmp)

    def write_sample(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.n_samples += 1

    def mark(self) -> tuple[int, int]:
        """A point to roll back to (before a model starts)."""
        self._fh.flush()
        return self._fh.tell(), self.n_samples

    def roll_back(self, mark: tuple[int, int]) -> None:
        """Drop every sample written after `mark` (those of a model that failed)."""
        self._fh.flush()
        self._fh.seek(mark[0])
        self._fh.truncate()
        self.n_samples = mark[1]

    def publish(self, results: EvalResults) -> Path:
        """Replace the folder's results.json and samples.jsonl by this run's, together."""
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        folder_fd = os.open(self.folder, os.O_RDONLY)  # the lock is on the folder itself
        try:
            if fcntl is not None:
                fcntl.flock(folder_fd, fcntl.LOCK_EX)
            os.replace(self._tmp, self.folder / SAMPLES_FILE)
            results.write(self.folder / RESULTS_FILE)
        finally:
            os.close(folder_fd)  # releases the lock
        return self.folder / RESULTS_FILE

    def discard(self) -> None:
        """Leave the folder as it was before the run (nothing of this run is kept)."""
        if not self._fh.closed:
            self._fh.close()
        self._tmp.unlink(missing_ok=True)
        if self.created and not any(self.folder.iterdir()):
            self.folder.rmdir()


def _remove_stale_partials(folder: Path, keep: Path) -> None:
    """Delete the temporary samples of runs that were killed (their process is gone)."""
    for path in folder.glob(f".{SAMPLES_FILE}.*.partial"):
        if path == keep:
            continue
        pid = path.name.removeprefix(f".{SAMPLES_FILE}.").split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True

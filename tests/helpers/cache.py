"""Looking into a response cache from a test (while another process may be writing it)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.helpers.http_doubles import FaultProxy


def cached_rows(cache: Path) -> int:
    db = cache / "responses.sqlite3"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def kill_once_cached(
    cmd: list[str], cache: Path, proxy: FaultProxy, *, rows: int, wait_s: float, drain_s: float
) -> int:
    """Start `cmd`, kill -9 it once `cache` holds `rows` answers, then wait (at most
    `drain_s`) for the request the kill cut off to leave `proxy`. Returns the rows cached
    by then."""
    killed = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + wait_s
    while cached_rows(cache) < rows and time.monotonic() < deadline and killed.poll() is None:
        time.sleep(0.05)
    assert killed.poll() is None, "the run finished before it could be killed"
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    done_before = cached_rows(cache)
    deadline = time.monotonic() + drain_s
    while proxy.in_flight and time.monotonic() < deadline:
        time.sleep(0.05)
    return done_before

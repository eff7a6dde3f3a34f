"""Looking into a response cache from a test (while another process may be writing it)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def cached_rows(cache: Path) -> int:
    db = cache / "responses.sqlite3"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.OperationalError:
        return 0

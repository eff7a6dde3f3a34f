"""The run folder: results.json and samples.jsonl.

The folder is derived data (the response cache is the state), but what is in it must be
consistent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hakari.runner.collect import SampleWriter


@contextmanager
def samples_writer(path: Path | None) -> Iterator[SampleWriter]:
    if path is None:
        yield lambda record: None
        return
    with path.open("w", encoding="utf-8") as fh:

        def write(record: dict[str, Any]) -> None:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")

        yield write

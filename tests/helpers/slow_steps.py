"""A `hakari` command whose transformers decoding is slowed and watched, so that a test can
kill or interrupt it between two rows' ends and know which rows had ended:

    python -m tests.helpers.slow_steps LOG SECONDS run --model hf:DIR ...

Before every forward pass of `ModelStep` (a decode step, a one-pass prefill) it appends
to LOG the number of generation rows that have ended so far (one line, flushed), then
sleeps SECONDS. A row's end is counted when `RowStepper.advance` ends it, so a line
counts only rows that ended in earlier passes: those the backend has handed on.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import Any

from hakari.backends.hf.rows import Row, RowStepper
from hakari.backends.hf.step import ModelStep


def main() -> None:
    log, seconds, args = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
    # Ctrl-C raises KeyboardInterrupt here even where the suite was started as a background
    # job of a script (`pytest &`): such a shell starts it with SIGINT ignored, which every
    # child inherits and Python then keeps, so the Ctrl-C test's SIGINT did nothing
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ended = 0
    advance, forward = RowStepper.advance, ModelStep.__call__

    def counting_advance(self: RowStepper, rows: list[Row], tokens: list[int]) -> None:
        nonlocal ended
        advance(self, rows, tokens)
        ended += sum(row.done for row in rows)  # live rows' last tokens: they leave the pool

    def slow_forward(self: ModelStep, *inputs: Any, **kwargs: Any) -> Any:
        with log.open("a") as out:
            out.write(f"{ended}\n")
        time.sleep(seconds)
        return forward(self, *inputs, **kwargs)

    RowStepper.advance = counting_advance  # type: ignore[method-assign]
    ModelStep.__call__ = slow_forward  # type: ignore[method-assign]

    from hakari.cli import app

    app(args=args, prog_name="hakari")


if __name__ == "__main__":
    main()

"""A command run at a real terminal: a pseudo-terminal of a fixed size, and its bytes fed
to a VT100 emulator (pyte), so that a test reads the screen a person would see, with
every cursor move and redraw of a live progress display applied."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import termios
import time
from collections.abc import Sequence

import pyte


def screen_of(
    argv: Sequence[str], *, columns: int = 80, rows: int = 60, timeout: float = 180
) -> tuple[int, list[str]]:
    """Run `argv` with a pseudo-terminal as stdin, stdout and stderr; returns its exit
    code and every line it left, scrolled off the top or on the screen (right-stripped)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = os.environ | {"TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    proc = subprocess.Popen(
        list(argv), stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    data = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: every copy of the terminal's other end is closed
                break
            if not chunk:
                break
            data += chunk
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
    screen = pyte.HistoryScreen(columns, rows, history=100_000)
    pyte.ByteStream(screen).feed(bytes(data))
    scrolled = [
        "".join(line[x].data for x in range(columns)).rstrip() for line in screen.history.top
    ]
    return code, scrolled + [line.rstrip() for line in screen.display]

"""Server processes for tests and benchmarks: a free loopback port, waiting until an
OpenAI-compatible server answers, and stopping a server with everything it started."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes], seconds: float = 180) -> None:
    """Until `url`/models answers; `SystemExit` when `proc` ended or `seconds` passed."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url + "/models", timeout=5) as response:
                response.read()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server at {url} did not start") from None
            time.sleep(0.3)


def kill_group(proc: subprocess.Popen[bytes], *, grace: float = 30.0) -> None:
    """SIGTERM to the process's group (started with `start_new_session=True`), then
    SIGKILL to what is left of it: an engine core that outlived its server included."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

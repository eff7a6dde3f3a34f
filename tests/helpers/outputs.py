"""Places a command must not replace or cannot write, for the hostile-output cases: a
private character device whose writes fail like /dev/full's, a link to this process's
standard output, the `hakari` command in a subprocess (its stdout on /dev/full), a run
still generating (its folder locked), and a folder that turns read-only during a run.

Nothing here depends on how hakari guards its outputs, so the same tests ran against the
code from before the guards (where a writer renamed over its target, the device node
and the link it replaced were private copies, never /dev/full or /dev/stdout)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import hakari
from tests.helpers.http_doubles import Reply, Seen, StubServer, chat, completion

FULL_DEVICE = os.makedev(1, 7) if hasattr(os, "makedev") else 0  # /dev/full's numbers


def full_device(folder: Path) -> Path:
    """A character device whose every write fails with ENOSPC: a node of our own with
    /dev/full's numbers where this process can make one (root), else /dev/full itself (a
    process that is not root cannot replace it)."""
    node = folder / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, FULL_DEVICE)
    except (OSError, AttributeError):
        if os.geteuid() == 0:
            pytest.skip("cannot make a device node: /dev/full itself is not put at risk")
        return Path("/dev/full")
    return node


def is_char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.stat(path).st_mode)


@contextmanager
def open_full_stdout() -> Iterator[int]:
    """A file descriptor of /dev/full, for a subprocess's standard output."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        yield fd
    finally:
        os.close(fd)


def stdout_link(folder: Path) -> Path:
    """A symbolic link to /dev/stdout in `folder` (the link, not /dev/stdout, is what a
    writer that renames over its target would replace)."""
    link = folder / "stdout"
    link.symlink_to("/dev/stdout")
    return link


def hakari_env(**extra: str) -> dict[str, str]:
    """The environment of a `hakari` subprocess that runs the code under test."""
    src = str(Path(hakari.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src, "PYTHONDONTWRITEBYTECODE": "1", **extra}
    env.pop("COLUMNS", None)
    return env


def hakari_process(
    *args: str, stdout: int | None = subprocess.PIPE, timeout: float = 300, **env: str
) -> subprocess.CompletedProcess[str]:
    """`python -m hakari ARGS` in a subprocess (stdout: a pipe, or a file descriptor),
    with 3 GiB of address space at most and `timeout` seconds: a read without bound
    fails the test instead of taking the machine."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "hakari", *args],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=hakari_env(**env),
            timeout=timeout,
            check=False,
            preexec_fn=_cap_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hakari {' '.join(args)} did not end in {timeout} s")


def _cap_memory() -> None:
    import resource

    cap = 3 << 30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def stderr_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


@dataclass
class Finished:
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""


@contextmanager
def run_in_flight(folder: Path, cache: Path) -> Iterator[Finished]:
    """`hakari run --output FOLDER` in a subprocess, held inside its first generation
    (a loopback server that answers only when the block ends); yields what the process
    did, filled in after the block."""
    asked, answer = threading.Event(), threading.Event()

    def respond(seen: Seen) -> Reply:
        asked.set()
        answer.wait(timeout=300)
        return answering("positive")(seen)

    server = StubServer(respond)
    args = ["run", "--model", f"openai:stub-model@{server.url}", *RUN_ARGS, "--output"]
    process = subprocess.Popen(
        [sys.executable, "-m", "hakari", *args, str(folder), "--cache-dir", str(cache)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=hakari_env(),
    )
    finished = Finished()
    try:
        if not asked.wait(timeout=240):
            process.kill()
            out, err = process.communicate()
            raise AssertionError(f"the run never asked the server: {out} {err}")
        yield finished
    finally:
        answer.set()
        try:
            finished.stdout, finished.stderr = process.communicate(timeout=240)
            finished.returncode = process.returncode
        finally:
            if process.poll() is None:
                process.kill()
            server.close()


def answering(text: str) -> Callable[[Seen], Reply]:
    """A loopback server's answer to every completion or chat request: `text`."""

    def respond(seen: Seen) -> Reply:
        if seen.path.endswith("/chat/completions"):
            return Reply(body=chat(text))
        return Reply(body=completion(text))

    return respond


# One template, one instance, greedy: the smallest run of a built-in task.
RUN_ARGS = [
    "--tasks", "demo_sentiment_en", "--templates", "0-0", "--limit", "1",
    "--decoding", "greedy", "--n-boot", "0",
]  # fmt: skip


@contextmanager
def refuse_writes_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """A switch that makes `folder` read-only (chmod 555); for root, whom a mode does not
    stop, every rename into it then fails with EACCES as it would for anyone else."""
    real_replace = os.replace
    read_only = threading.Event()

    def replace(src: object, dst: object, **kwargs: object) -> None:
        target = Path(os.fsdecode(dst))  # type: ignore[arg-type]
        if read_only.is_set() and target.resolve().parent == folder.resolve():
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(dst))
        real_replace(src, dst, **kwargs)  # type: ignore[arg-type]

    def make_read_only() -> None:
        folder.chmod(0o555)
        read_only.set()

    if os.geteuid() == 0:
        monkeypatch.setattr(os, "replace", replace)
    try:
        yield make_read_only
    finally:
        read_only.clear()
        folder.chmod(0o755)


def finished_run(folder: Path) -> Path:
    """A small finished run folder (fake backend: demo_sentiment_en, greedy, 2 templates,
    3 instances, no bootstrap, no cache)."""
    from hakari.backends.fake import FakeBackend
    from hakari.runner import evaluate

    evaluate(
        tasks=["demo_sentiment_en"],
        decodings=["greedy"],
        templates=["0-0", "1-0"],
        limit=3,
        output_dir=folder,
        use_cache=False,
        n_boot=0,
        backend_factory=lambda spec: FakeBackend(lambda request: "positive"),
    )
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (hidden ones included) and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}

"""Starting a vLLM engine as one line when it fails, and with a memory share a CPU host
can give.

vLLM's engine starts in a child process; when it fails, the child prints its traceback
(about a hundred lines) to the standard error the parent shares, and the parent raises
only "Engine core initialization failed. See root cause above". So the standard error
of the start is captured (`captured_stderr`: the file descriptor, which the child
inherits), shown as it was when the start succeeds, and read for the root cause when it
fails (`root_cause`): the first exception line of the log that is not one of vLLM's
wrappers, with what fixes it (`fix_for`). The whole log stays in a file the error names.

On a CPU host vLLM's CPU backend reserves `gpu_memory_utilization` of the machine's
memory and refuses to start when less is free (vLLM's default, 0.9, on a machine that
runs anything else); `cpu_memory_share` sizes the share to what is free now.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hakari._util import checks

# "(EngineCore_DP0 pid=123) ERROR 11-25 12:00:01 [core.py:708] " before a logged line
_LOG_PREFIX = re.compile(r"^(?:\([^)]*\)\s*)?(?:(?:ERROR|WARNING|INFO)\s[^\]]*\]\s*)?")
_EXCEPTION = re.compile(r"^((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception)): (.+)$")
# vLLM's own wrappers around the real failure
_WRAPPERS = ("Engine core initialization failed", "EngineCore failed to start")
_FIXES = (
    (
        re.compile(r"memory utilization|Available memory|Free memory", re.I),
        "lower --gpu-memory-utilization (e.g. 0.4), or free memory",
    ),
    (
        re.compile(r"out of memory|OutOfMemory|Cannot allocate memory", re.I),
        "lower --gpu-memory-utilization or --max-model-len, or use a smaller model",
    ),
    (
        re.compile(r"max_model_len|max seq len|KV cache", re.I),
        "lower --max-model-len (or --engine-arg kv_cache_memory_bytes=...)",
    ),
)
FREE_SHARE = 0.9  # of the memory free now, at most vLLM's own default share
MIN_SHARE = 0.05


def root_cause(log: str) -> str | None:
    """The first exception line of a captured vLLM log that is not one of vLLM's
    wrappers ("See root cause above"), without its log prefix; None if there is none."""
    for raw in log.splitlines():
        line = _LOG_PREFIX.sub("", raw.strip())
        match = _EXCEPTION.match(line)
        if match and not any(w in match[2] for w in _WRAPPERS):
            return f"{match[1].rpartition('.')[2]}: {match[2].strip()}"
    return None


def fix_for(cause: str) -> str | None:
    """The option that fixes a root cause, where it is a known one."""
    for pattern, fix in _FIXES:
        if pattern.search(cause):
            return fix
    return None


def failure_line(exc: BaseException, log: str, log_path: Path | None) -> str:
    """One line for an engine that failed to start: vLLM's root cause (else the
    exception's own message), the fix, and where the whole log is."""
    cause = root_cause(log) or " ".join(str(exc).split())
    fix = fix_for(cause)
    where = f" (vLLM's log: {log_path})" if log_path is not None else ""
    return f"{cause}{f'; {fix}' if fix else ''}{where}"


@contextmanager
def captured_stderr(found: list[str]) -> Iterator[None]:
    """Standard error (the descriptor: child processes' too) goes to a file while the
    block runs; `found` gets the file's path and its text afterwards. The text is
    written to the real standard error, and the file removed, when the block succeeds."""
    fd = 2
    log = tempfile.NamedTemporaryFile(prefix="hakari-vllm-start-", suffix=".log", delete=False)
    sys.stderr.flush()
    saved = os.dup(fd)
    os.dup2(log.fileno(), fd)
    ok = False
    try:
        yield
        ok = True
    finally:
        sys.stderr.flush()
        os.dup2(saved, fd)
        os.close(saved)
        log.close()
        text = Path(log.name).read_text(encoding="utf-8", errors="replace")
        found.extend([log.name, text])
        if ok:
            sys.stderr.write(text)
            os.unlink(log.name)


def cpu_memory_share(engines: int = 1) -> float | None:
    """The `gpu_memory_utilization` each of `engines` engines starting together on this
    CPU host can take now: `FREE_SHARE` of the free memory as a share of the total,
    split between them (vLLM's CPU backend reserves that share of the total and refuses
    to start when less is free; two engines each asking for 0.9 of what is free cannot
    both start); None where the memory cannot be read."""
    free, total = checks.available_memory(), _total_memory()
    if not free or not total:
        return None
    share = FREE_SHARE * free / total / max(1, engines)
    return round(max(MIN_SHARE, min(FREE_SHARE, share)), 3)


def _total_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None

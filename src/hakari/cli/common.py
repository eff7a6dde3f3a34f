"""What every command shares: the consoles, the one `fail`, option splitting, the command
line as recorded in results.json.

Everything printed may hold user or model text (task names, regexes, model specs, file
names, outputs): no console reads markup, and styled parts are `Text` objects; and while a
command runs, stdout and stderr pass through the one redaction filter
(`redacted_output`), so no credential is printed. This module imports typer, rich and
`hakari._util.redact` (RE2) only, so that `hakari --help` loads nothing heavy.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from hakari._util.redact import RedactingStream, redact
from hakari.errors import HakariInputError

if TYPE_CHECKING:
    from hakari._util.atomic import Output

console = Console(markup=False)
err_console = Console(stderr=True, markup=False, highlight=False)

SERVING = "Servers and vLLM"  # help panel of the serving options

_invoked_args: list[str] = []  # the command line of this invocation, after "hakari"


QUIET_LIBRARIES = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # hub downloads, transformers' loading bars
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    # every other tqdm bar, e.g. transformers' GGUF de-quantising of a packaged model's
    # first conversion (tqdm reads its TQDM_* defaults when it is imported)
    "TQDM_DISABLE": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}
# Not here: TOKENIZERS_PARALLELISM. "false" made the Rust tokenizer encode a batch on one
# thread (5,120 prompts: 1.29 s against 0.59 s on two, docs/results/speed.md); hakari
# forks no process of its own, and the vLLM engine, which may fork its workers, sets it
# for itself (`backends/vllm/engine.py`).


def quiet_libraries(*, verbose: bool) -> None:
    """The libraries' own progress bars and advice off (hakari shows its own progress)
    unless --verbose; a variable the user set is left as it is. Set before the
    libraries are imported (they read them at import)."""
    if verbose:
        return
    for name, value in QUIET_LIBRARIES.items():
        os.environ.setdefault(name, value)


def remember_argv(args: Sequence[str]) -> None:
    """Called once by the app with the arguments it parses."""
    global _invoked_args
    _invoked_args = list(args)


def recorded_argv() -> list[str]:
    """The command as typed, for results.json: API keys, bearer tokens, URL passwords and
    secret query values replaced by *** (a key shorter than a credential is left alone,
    so `HAKARI_API_KEY=-` does not star every `-`: `hakari._util.redact`)."""
    return ["hakari", *(redact(a) for a in _invoked_args)]


@contextmanager
def redacted_output() -> Iterator[None]:
    """Everything a command prints (consoles, print, log records on stderr) passes
    through the one redaction filter while the command runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While a command runs, SIGTERM (a `kill`, a job scheduler, a container stop) ends
    it as Ctrl-C does: a `KeyboardInterrupt`, so every writer drops its `.tmp` and
    `.partial` files and every lock is released (the default action left them behind).
    Only the main thread can set a handler; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt("terminated (SIGTERM)")

    saved = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, saved)


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def print_error(message: str, notes: Sequence[str] | None = None) -> None:
    """`error: <message>` on one line on stderr, then each note on a line of its own."""
    err_console.print(Text.assemble(("error: ", "bold red"), _one_line(message)), soft_wrap=True)
    for note in notes or []:
        err_console.print(Text(_one_line(note)), soft_wrap=True)


def fail(exc: HakariInputError) -> NoReturn:
    """Bad input: one line on stderr (plus what was saved, if a run got that far), exit 2."""
    print_error(str(exc), getattr(exc, "__notes__", None))
    raise typer.Exit(code=2)


def write_output(output: Output, text: str) -> None:
    """A text output a command was asked for (`--html`, `--json`...), checked with
    `check_output` before the command's work: written whole or not at all (through a
    symbolic link, in place to a device), without credentials (`hakari._util.redact`); a
    failure is one line naming the file."""
    from hakari._util.atomic import write_text_atomic

    write_text_atomic(output, redact(text))


def split_csv(values: str | Sequence[str] | None) -> list[str]:
    """`a,b` or [`a,b`, `c`] (a repeated option) → [a, b, c]; blanks dropped."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    return [x.strip() for v in items for x in v.split(",") if x.strip()]

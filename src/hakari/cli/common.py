"""What every command shares: the consoles, the one `fail`, option splitting, the command
line as recorded in results.json.

Everything printed may hold user or model text (task names, regexes, model specs, file
names, outputs): no console reads markup, and styled parts are `Text` objects. This module
imports typer and rich only, so that `hakari --help` loads nothing heavy.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.text import Text

from hakari.errors import HakariInputError

console = Console(markup=False)
err_console = Console(stderr=True, markup=False, highlight=False)

SERVING = "Servers and vLLM"  # help panel of the serving options

_invoked_args: list[str] = []  # the command line of this invocation, after "hakari"


def tolerate_narrow_terminals() -> None:
    """On a stream whose encoding cannot show every character (`PYTHONIOENCODING=ascii`,
    a C locale), characters it cannot encode are written as escapes (`\\u2014`) instead
    of ending the command with a UnicodeEncodeError: what Python already does on stderr."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        reconfigure = getattr(stream, "reconfigure", None)
        if encoding not in ("utf8", "utf16", "utf32") and reconfigure is not None:
            reconfigure(errors="backslashreplace")


def remember_argv(args: Sequence[str]) -> None:
    """Called once by the app with the arguments it parses."""
    global _invoked_args
    _invoked_args = list(args)


def recorded_argv() -> list[str]:
    """The command as typed, for results.json: API keys, bearer tokens and URL passwords
    replaced by ***."""
    from hakari.backends.openai.spec import redact_secrets

    return ["hakari", *(redact_secrets(a) for a in _invoked_args)]


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


def write_output(path: Path, text: str) -> None:
    """A text output a command was asked for (`--html`, `--json`...), written whole or not
    at all; a folder that cannot be written is one line naming the file."""
    from hakari._util.atomic import write_text_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    except OSError as exc:
        raise HakariInputError(f"cannot write: {exc.strerror or exc}", file=str(path)) from exc


def split_csv(values: str | Sequence[str] | None) -> list[str]:
    """`a,b` or [`a,b`, `c`] (a repeated option) → [a, b, c]; blanks dropped."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    return [x.strip() for v in items for x in v.split(",") if x.strip()]

"""What every command shares: the consoles, the one `fail`, option splitting, the command
line as recorded in results.json.

Everything printed may hold user or model text (task names, regexes, model specs, file
names, outputs): no console reads markup, and styled parts are `Text` objects. This module
imports typer and rich only, so that `hakari --help` loads nothing heavy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from hakari.errors import HakariInputError

if TYPE_CHECKING:
    from hakari._util.atomic import Output

console = Console(markup=False)
err_console = Console(stderr=True, markup=False, highlight=False)

SERVING = "Servers and vLLM"  # help panel of the serving options

_invoked_args: list[str] = []  # the command line of this invocation, after "hakari"


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


def write_output(output: Output, text: str) -> None:
    """A text output a command was asked for (`--html`, `--json`...), checked with
    `check_output` before the command's work: written whole or not at all (through a
    symbolic link, in place to a device); a failure is one line naming the file."""
    from hakari._util.atomic import write_text_atomic

    write_text_atomic(output, text)


def split_csv(values: str | Sequence[str] | None) -> list[str]:
    """`a,b` or [`a,b`, `c`] (a repeated option) → [a, b, c]; blanks dropped."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    return [x.strip() for v in items for x in v.split(",") if x.strip()]

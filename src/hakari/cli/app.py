"""The `hakari` command line: one Typer app, every command group wired here in one place.

Each command lives in a module of its own (`run.py`, `report.py`, `tasks.py`,
`models.py`, `score.py` with `analyze`, `meta.py`, `pfgen.py`, `finetune.py`, `interop.py`
with `import` and `export`) that imports only typer, rich and `hakari.errors` at the top;
the machinery a command needs (torch, the statistics, the report builder) is imported
inside the command, so `hakari --help` and a light command such as `hakari pfgen score`
start fast.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import typer
from typer._click.exceptions import (
    ClickException,
    NoArgsIsHelpError,
    NoSuchOption,
    UsageError,
)
from typer.core import TyperGroup

from hakari._util.checks import did_you_mean
from hakari.backends.cpu import choose_wait_policy
from hakari.cli import finetune, interop, meta, models, pfgen, report, run, score, tasks
from hakari.cli.common import (
    err_console,
    print_error,
    quiet_libraries,
    redacted_output,
    remember_argv,
    terminate_as_interrupt,
)


class _OneLineUsageErrors(TyperGroup):
    """Bad option values (`--alpha abc`, `--batch-size 0`), unknown options and missing
    arguments end like every other bad input: one `error:` line on stderr naming the
    option, exit code 2, instead of click's usage box. Help stays help. (typer ≥ 0.29
    carries its own copy of click: its exceptions live in `typer._click`.)"""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        given = list(args) if args is not None else sys.argv[1:]
        remember_argv(given)
        # every command: the libraries' bars and advice off (`hakari run --verbose` keeps them)
        quiet_libraries(verbose="--verbose" in given or "-v" in given)
        _never_fail_on_text()
        with redacted_output(), terminate_as_interrupt():
            return self._main(args, prog_name, complete_var, standalone_mode, **extra)

    def _main(
        self,
        args: Sequence[str] | None,
        prog_name: str | None,
        complete_var: str | None,
        standalone_mode: bool,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except NoArgsIsHelpError as exc:
            exc.show()  # `hakari` or `hakari tasks` alone: the help text
            sys.exit(0)
        except UsageError as exc:
            command = exc.ctx.command_path if exc.ctx is not None else "hakari"
            print_error(f"{_usage_message(exc)} (see: {command} --help)")
            sys.exit(2)
        except ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except typer.Abort:
            err_console.print("Aborted.")
            sys.exit(1)
        except OSError as exc:  # hakari's own files fail as HakariInputError: mostly stdout
            _output_failed(exc)
        sys.exit(rv if isinstance(rv, int) else 0)


def _usage_message(exc: UsageError) -> str:
    """click's message, an unknown option's closest name as "did you mean" (click lists
    every close one as "Possible options")."""
    if isinstance(exc, NoSuchOption) and exc.possibilities:
        return f"no such option: {exc.option_name}" + did_you_mean(
            exc.option_name, exc.possibilities
        )
    return exc.format_message()


def _never_fail_on_text() -> None:
    """Text the console cannot encode (a lone surrogate in a model's answer, Japanese
    under an ASCII locale) is printed as backslash escapes, never a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _output_failed(exc: OSError) -> NoReturn:
    """Standard output could not be written (a full disk under `> file`, /dev/full, a
    closed pipe): one line on stderr, exit 2; a reader that went away (`| head`) ends the
    command quietly. Output still buffered for the broken stream is dropped."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    if exc.errno == errno.EPIPE:
        sys.exit(1)
    if exc.filename:  # not stdout after all: say what the system said about which file
        print_error(f"file {exc.filename}: {exc.strerror or exc}")
    else:
        print_error(f"cannot write standard output: {exc.strerror or exc}")
    sys.exit(2)


app = typer.Typer(
    help="hakari (秤): fair, variance-aware evaluation of LLMs across instruction templates.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=_OneLineUsageErrors,
)
app.command()(run.run)
app.command()(report.report)
app.command()(score.score)
app.command()(score.analyze)
app.command()(meta.meta)
app.command("import")(interop.import_)
app.command()(interop.export)
app.add_typer(tasks.app, name="tasks")
app.add_typer(models.app, name="models")
app.add_typer(pfgen.app, name="pfgen", help="pfgen-bench: Japanese generation benchmark.")
app.command(
    help="Train LoRA/QLoRA adapters; evaluate them with --model SPEC+adapter:DIR.",
)(finetune.finetune)


def main() -> None:  # pragma: no cover - console entry point
    choose_wait_policy()  # before any command imports torch (docs/results/threads.md)
    app()

"""The `hakari` command line (`hakari.cli.app`): a thin layer over `hakari.evaluate` and
the other stages, one module per command group.

Modules: `app.py` (the Typer app, every group wired in one place), `common.py` (what every
command shares: consoles, the one `fail`, the recorded command line), `options.py` (shared
options declared once; `hakari run`'s groups), `run.py`, `report.py`, `tasks.py`,
`models.py`, `score.py` (`score` and `analyze`), `finetune.py`, `meta.py`, `pfgen.py`,
`interop.py` (`import` and `export`): one command (group) each.
"""

from hakari.cli.app import app, main

__all__ = ["app", "main"]

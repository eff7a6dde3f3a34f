"""`hakari models list`: the models that load without a download, and the spec forms."""

from __future__ import annotations

import typer
from rich.table import Table

from hakari.cli.common import console

app = typer.Typer(help="The models hakari can load without a download.", no_args_is_help=True)


@app.command("list")
def models_list() -> None:
    """The packaged small models (shipped inside PyPI packages) and the spec forms."""
    from hakari.backends.registry import list_packaged_models

    table = Table(title="packaged models", title_justify="left")
    for col in ("spec", "installed", "model", "install"):
        table.add_column(col)
    for model, installed in list_packaged_models():
        table.add_row(
            model.name, "yes" if installed else "no", model.description, model.pip_install
        )
    console.print(table)
    console.print("Any other causal LM: --model hf:<local folder> or hf:<hub id>[@revision]")

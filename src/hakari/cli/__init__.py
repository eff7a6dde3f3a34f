"""The `hakari` command line (`hakari.cli.app`): a thin layer over `hakari.evaluate` and
the other stages, one module per command group."""

from hakari.cli.app import app, main

__all__ = ["app", "main"]

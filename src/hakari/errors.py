"""Errors that reach the user as one clear message (CLI exit code 2)."""

from __future__ import annotations


class HakariInputError(Exception):
    """Bad user input: a task file, a dataset, a model spec or a CLI option.

    The message names the file and the field (and the template id where there is one),
    so that the user can fix it without reading a traceback. Rows are numbered from 0
    in split order, as `index` in samples.jsonl.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        field: str | None = None,
        template: str | None = None,
        row: int | None = None,
    ) -> None:
        self.file = file
        self.row = row
        self.field = field
        self.template = template
        self.detail = message
        where = []
        if file:
            where.append(f"file {file}")
        if row is not None:
            where.append(f"row {row}")
        if template:
            where.append(f"template {template}")
        if field:
            where.append(f"field {field}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class ModelLoadError(HakariInputError):
    """A model spec that cannot be resolved or loaded."""


class CacheError(HakariInputError):
    """The response cache database cannot be opened, read or written."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(
            f"the response cache cannot be used ({problem}); run with --no-cache, or point "
            "--cache-dir at another folder (or move the damaged file away)",
            file=path,
        )


def one_line(exc: BaseException, limit: int = 160) -> str:
    """An exception's message on one line, shortened: for errors that quote a library's."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

"""Comma-separated files with a header line (JCommonsenseMorality's `data_*.csv`), read
with the standard library's `csv` module as llm-jp-eval's processor reads them
(`csv.reader`, quoting honoured). The header names the fields as `tsv.py` names them (an
empty or repeated name becomes `column_<i>`: the set's unnamed index column is
`column_0`), and a row with another number of fields than the header is refused.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hakari._util.infiles import open_input_text
from hakari.errors import HakariInputError
from hakari.tasks.readers.tsv import header_names


def read_csv(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        with open_input_text(path, newline="") as fh:
            reader = csv.reader(fh)
            header = header_names(next(reader, []))
            for row in reader:
                where = f"line {reader.line_num}"
                if len(row) != len(header):
                    raise HakariInputError(
                        f"{where} has {len(row)} comma-separated fields, the header {len(header)}",
                        file=str(path),
                    )
                yield where, dict(zip(header, row, strict=True))
    except UnicodeDecodeError:
        raise HakariInputError("not UTF-8 text; save the file as UTF-8", file=str(path)) from None
    except csv.Error as exc:
        raise HakariInputError(f"not readable as CSV: {exc}", file=str(path)) from None

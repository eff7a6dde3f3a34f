"""Tab-separated files as llm-jp-eval's processors read them: the first line is the
header, every other line is `line.split("\\t")` (no quoting: a `"` is text), fields by
position. Here the header names the fields (an empty or repeated name becomes
`column_<i>`), the line end is dropped from the last field, and a line with another
number of fields than the header is refused, since fields by position would then shift.

MGSM's `mgsm_ja.tsv` has no header: `question` TAB `answer_number`, as the Hugging Face
dataset juletxara/mgsm (which llm-jp-eval loads) holds it: `answer_number` is an int32
there, so the file's thousands commas go ("2,125" is 2125).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hakari._util.infiles import open_input_text
from hakari.errors import HakariInputError


def read_tsv(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        with open_input_text(path) as fh:
            header = header_names(fh.readline().rstrip("\n").split("\t"))
            for number, line in enumerate(fh, start=2):
                values = line.rstrip("\n").split("\t")
                if len(values) != len(header):
                    raise HakariInputError(
                        f"line {number} has {len(values)} tab-separated fields, the header "
                        f"{len(header)}",
                        file=str(path),
                    )
                yield f"line {number}", dict(zip(header, values, strict=True))
    except UnicodeDecodeError:
        raise HakariInputError("not UTF-8 text; save the file as UTF-8", file=str(path)) from None


def header_names(raw: list[str]) -> list[str]:
    """Field names from a header line: an empty or repeated one becomes `column_<i>`."""
    seen: set[str] = set()
    names = []
    for i, name in enumerate(raw):
        usable = name if name and name not in seen else f"column_{i}"
        seen.add(usable)
        names.append(usable)
    return names


def read_mgsm_tsv(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        with open_input_text(path) as fh:
            for number, line in enumerate(fh, start=1):
                values = line.rstrip("\n").split("\t")
                answer = values[1].replace(",", "") if len(values) == 2 else ""
                if not answer.lstrip("-").isdigit():
                    raise HakariInputError(
                        f"line {number} is not 'question TAB integer answer'", file=str(path)
                    )
                yield f"line {number}", {"question": values[0], "answer_number": str(int(answer))}
    except UnicodeDecodeError:
        raise HakariInputError("not UTF-8 text; save the file as UTF-8", file=str(path)) from None

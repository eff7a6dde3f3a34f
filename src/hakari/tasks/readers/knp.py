"""The Wikipedia Annotated Corpus (KNP format), read for llm-jp-eval v1.3.0's
`wiki_reading`: a file lists document ids (`id/test.id`); each document is
`knp/<first 8 characters>/<id>.knp`, read in sorted id order (the processor sorts the
file names). One row per document: `text`, its sentences' text, and `reading`, their
readings in hiragana, as `datasets/wiki/reading.py` makes them with rhoknp:

- a sentence whose comment line holds `括弧始` (a parenthesised part cut out) is skipped;
- a morpheme's text and reading are its line's first two space-separated fields;
- a reading that is a space where the text is not (熟字訓) counts as "", a reading
  with "/" (にほん/にっぽん) as its first part, and a reading of capital letters A–Z
  as their Japanese names (えー, びー, …).

KNP lines: `# ` a sentence's comment, `* ` a phrase, `+ ` a base phrase, `EOS` the end,
anything else a morpheme. Only what `wiki_reading` needs is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hakari.errors import HakariInputError

_ALPHABET_NAMES = dict(
    zip(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "えー びー しー でぃー いー えふ じー えいち あい じぇー けー える えむ えぬ おー ぴー "
        "きゅー あーる えす てぃー ゆー ぶい だぶりゅー えっくす わい ぜっと".split(" "),
        strict=True,
    )
)


def read_wiki_reading(id_file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc_id in sorted(_ids(id_file)):
        path = id_file.parent.parent / "knp" / doc_id[:8] / f"{doc_id}.knp"
        text, reading = _document(path)
        yield f"document {doc_id}", {"id": doc_id, "text": text, "reading": reading}


def _ids(id_file: Path) -> list[str]:
    try:
        return [line for line in id_file.read_text(encoding="utf-8").splitlines() if line]
    except (OSError, UnicodeDecodeError) as exc:
        raise HakariInputError(f"cannot read the id list: {exc}", file=str(id_file)) from None


def _document(path: Path) -> tuple[str, str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise HakariInputError(f"cannot read the KNP document: {exc}", file=str(path)) from None
    text, reading, skipped = [], [], False
    for number, line in enumerate(lines, start=1):
        if line.startswith("# "):
            skipped = "括弧始" in line
        elif line == "EOS" or line.startswith(("* ", "+ ")) or skipped:
            continue
        else:
            fields = line.split(" ")
            if len(fields) < 2:
                raise HakariInputError(f"line {number} is no morpheme line", file=str(path))
            text.append(fields[0])
            reading.append(_reading(fields[0], fields[1]))
    return "".join(text), "".join(reading)


def _reading(surface: str, reading: str) -> str:
    if reading in (" ", "　") and surface not in (" ", "　"):
        return ""
    first = reading.split("/")[0]
    if first and all(ch in _ALPHABET_NAMES for ch in first):
        return "".join(_ALPHABET_NAMES[ch] for ch in first)
    return first

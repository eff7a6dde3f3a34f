"""The Wikipedia Annotated Corpus (KNP format), read for llm-jp-eval v1.3.0's
`wiki_reading` and `wiki_dependency`: a file lists document ids (`id/test.id`); each
document is `knp/<first 8 characters>/<id>.knp`, read in sorted id order (the processor
sorts the file names). Sentences whose comment line holds `括弧始` (a parenthesised part
cut out) are left out of both. One row per document: `text`, its sentences' text; and
`reading`, their readings in hiragana, as `datasets/wiki/reading.py` makes them with
rhoknp; or `dependencies`, one "child -> parent" line per phrase that has a parent (the
phrases' texts, in phrase order), as `datasets/wiki/dependency.py` does:

- a morpheme's text and reading are its line's first two space-separated fields;
- a reading that is a space where the text is not (熟字訓) counts as "", a reading
  with "/" (にほん/にっぽん) as its first part, and a reading of capital letters A–Z
  as their Japanese names (えー, びー, …).

KNP lines: `# ` a sentence's comment, `* <parent>D` a phrase (`-1` none), `+ ` a base
phrase, `EOS` the end, anything else a morpheme. Only what these two sets need is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
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


@dataclass
class _Phrase:
    parent: int
    morphemes: list[tuple[str, str]] = field(default_factory=list)  # (text, reading)

    @property
    def text(self) -> str:
        return "".join(t for t, _ in self.morphemes)


def read_wiki_reading(id_file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc_id, sentences in _documents(id_file):
        text = "".join(p.text for phrases in sentences for p in phrases)
        reading = "".join(
            _reading(*m) for phrases in sentences for p in phrases for m in p.morphemes
        )
        yield f"document {doc_id}", {"id": doc_id, "text": text, "reading": reading}


def read_wiki_dependency(id_file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc_id, sentences in _documents(id_file):
        text = "".join(p.text for phrases in sentences for p in phrases)
        lines = [
            f"{p.text} -> {phrases[p.parent].text}"
            for phrases in sentences
            for p in phrases
            if p.parent != -1
        ]
        yield f"document {doc_id}", {"id": doc_id, "text": text, "dependencies": "\n".join(lines)}


def _documents(id_file: Path) -> Iterator[tuple[str, list[list[_Phrase]]]]:
    for doc_id in sorted(_ids(id_file)):
        path = id_file.parent.parent / "knp" / doc_id[:8] / f"{doc_id}.knp"
        yield doc_id, _sentences(path)


def _ids(id_file: Path) -> list[str]:
    try:
        return [line for line in id_file.read_text(encoding="utf-8").splitlines() if line]
    except (OSError, UnicodeDecodeError) as exc:
        raise HakariInputError(f"cannot read the id list: {exc}", file=str(id_file)) from None


def _sentences(path: Path) -> list[list[_Phrase]]:
    """The phrases of each sentence kept (those without `括弧始`)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise HakariInputError(f"cannot read the KNP document: {exc}", file=str(path)) from None
    sentences: list[list[_Phrase]] = []
    skipped = False
    for number, line in enumerate(lines, start=1):
        if line.startswith("# "):
            skipped = "括弧始" in line
            if not skipped:
                sentences.append([])
        elif skipped or line == "EOS" or line.startswith("+ "):
            continue
        elif not sentences:
            raise HakariInputError(f"line {number} comes before a sentence", file=str(path))
        elif line.startswith("* "):
            sentences[-1].append(_Phrase(_parent(line, number, path)))
        else:
            fields = line.split(" ")
            if len(fields) < 2 or not sentences[-1]:
                raise HakariInputError(f"line {number} is no morpheme line", file=str(path))
            sentences[-1][-1].morphemes.append((fields[0], fields[1]))
    for phrases in sentences:
        if any(not -1 <= p.parent < len(phrases) for p in phrases):
            raise HakariInputError("a phrase's parent is not in its sentence", file=str(path))
    return sentences


def _parent(line: str, number: int, path: Path) -> int:
    head = line.split(" ")[1] if len(line.split(" ")) > 1 else ""
    digits = head[:-1]
    if not head or head[-1] not in "DPAI" or not digits.lstrip("-").isdigit():
        raise HakariInputError(f"line {number}: no dependency in {line[:40]!r}", file=str(path))
    return int(digits)


def _reading(surface: str, reading: str) -> str:
    if reading in (" ", "　") and surface not in (" ", "　"):
        return ""
    first = reading.split("/")[0]
    if first and all(ch in _ALPHABET_NAMES for ch in first):
        return "".join(_ALPHABET_NAMES[ch] for ch in first)
    return first

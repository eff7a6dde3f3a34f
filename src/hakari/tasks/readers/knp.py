"""KNP files of the Wikipedia Annotated Corpus, parsed as far as llm-jp-eval v1.3.0's
Wikipedia sets read them through rhoknp (`wiki.py` makes the reading, dependency and
NER rows, `wikirel.py` the predicate-argument and coreference ones).

A file lists document ids (`id/test.id`); each document is
`knp/<first 8 characters>/<id>.knp`, read in sorted id order (the processor sorts the
file names). KNP lines: `# ` a sentence's comment (`S-ID:<sid>` first), `* <parent>D` a
phrase (`-1`: none; also `P`, `A`, `I`), `+ <parent>D <features>` a base phrase (its
parent a base phrase of the sentence; features such as `<NE:CATEGORY:text>` and the
corpus's `<rel …/>` relations), `EOS` the end, anything else a morpheme (`text reading
lemma part-of-speech …`, separated by single spaces).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from hakari._util.infiles import read_input_text
from hakari.errors import HakariInputError

# rhoknp's feature value pattern, for the `NE` feature of a base phrase line
_NE_FEATURE = re.compile(r"<NE:((?:[^>\\]|\\>?)+)>")
_SID = re.compile(r"# S-ID: ?(\S*)")
# a document id is a file name inside knp/ (the corpus's are `wiki` and digits): never a
# path, so an id list cannot make the reader open a file elsewhere (`/home/…`, `../…`)
_DOC_ID = re.compile(r"\w[\w-]*")
# The corpus's largest document is 29 KB and its id lists a few KB: a file past this is
# not the corpus's, refused before it is read.
KNP_FILE_LIMIT = 64 << 20


class Morpheme(NamedTuple):
    text: str
    reading: str
    pos: str  # 品詞: 名詞, 助詞, 特殊, 判定詞, …


@dataclass
class BasePhrase:
    """A base phrase (基本句): `parent`, a base phrase index in the sentence (-1: none)."""

    parent: int
    features: str  # the rest of its line: `<NE:…>`, `<rel …/>`, …
    morphemes: list[Morpheme] = field(default_factory=list)


@dataclass
class Phrase:
    parent: int
    morphemes: list[Morpheme] = field(default_factory=list)
    base_phrases: list[BasePhrase] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(m.text for m in self.morphemes)


@dataclass
class Sentence:
    comment: str
    phrases: list[Phrase] = field(default_factory=list)
    # each base phrase's last NE feature value ("PERSON:織田信長", `\>` as ">") and the
    # number of the sentence's morphemes up to the base phrase's end
    named: list[tuple[str, int]] = field(default_factory=list)

    @property
    def morphemes(self) -> list[Morpheme]:
        return [m for p in self.phrases for m in p.morphemes]

    @property
    def sid(self) -> str:
        """The sentence id: the comment's `S-ID:` value ("" without one)."""
        match = _SID.match(self.comment)
        return match.group(1) if match else ""

    @property
    def base_phrases(self) -> list[BasePhrase]:
        return [b for p in self.phrases for b in p.base_phrases]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.phrases)


def documents(id_file: Path) -> Iterator[tuple[str, list[Sentence]]]:
    for doc_id in sorted(_ids(id_file)):
        path = id_file.parent.parent / "knp" / doc_id[:8] / f"{doc_id}.knp"
        yield doc_id, _sentences(path)


def _ids(id_file: Path) -> list[str]:
    try:
        lines = read_input_text(id_file, limit=KNP_FILE_LIMIT).splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise HakariInputError(f"cannot read the id list: {exc}", file=str(id_file)) from None
    for number, line in enumerate(lines, start=1):
        if line and not _DOC_ID.fullmatch(line):
            raise HakariInputError(
                f"line {number}: {line[:40]!r} is not a document id (letters, digits, _ and -;"
                " a document is knp/<first 8 characters>/<id>.knp)",
                file=str(id_file),
            )
    return [line for line in lines if line]


def _sentences(path: Path) -> list[Sentence]:
    try:
        lines = read_input_text(path, limit=KNP_FILE_LIMIT).splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise HakariInputError(f"cannot read the KNP document: {exc}", file=str(path)) from None
    sentences: list[Sentence] = []
    pending_ne: str | None = None  # the NE of the base phrase being read
    for number, line in enumerate(lines, start=1):
        if line.startswith("# "):
            sentences.append(Sentence(line))
            continue
        if line == "EOS" or not sentences:
            if not sentences and line != "EOS":
                raise HakariInputError(f"line {number} comes before a sentence", file=str(path))
            _close_ne(sentences, pending_ne)
            pending_ne = None
            continue
        sentence = sentences[-1]
        if line.startswith(("* ", "+ ")):
            _close_ne(sentences, pending_ne)
            pending_ne = None
        if line.startswith("* "):
            sentence.phrases.append(Phrase(_parent(line, number, path)))
        elif line.startswith("+ "):
            if not sentence.phrases:
                raise HakariInputError(
                    f"line {number}: a base phrase before its phrase", file=str(path)
                )
            parent, _, features = line[2:].partition(" ")
            sentence.phrases[-1].base_phrases.append(
                BasePhrase(_parent(f"+ {parent}", number, path), features)
            )
            found = _NE_FEATURE.findall(line)
            pending_ne = found[-1].replace("\\>", ">") if found else None
        else:
            _add_morpheme(sentence, line, number, path)
    _close_ne(sentences, pending_ne)
    for sentence in sentences:
        if any(not -1 <= p.parent < len(sentence.phrases) for p in sentence.phrases):
            raise HakariInputError("a phrase's parent is not in its sentence", file=str(path))
        units = sentence.base_phrases
        if any(not -1 <= b.parent < len(units) or not b.morphemes for b in units):
            raise HakariInputError(
                "a base phrase has no morpheme or its parent is not in its sentence",
                file=str(path),
            )
    return sentences


def _add_morpheme(sentence: Sentence, line: str, number: int, path: Path) -> None:
    fields = line.split(" ")
    if len(fields) < 4 or not sentence.phrases:
        raise HakariInputError(f"line {number} is no morpheme line", file=str(path))
    morpheme = Morpheme(fields[0], fields[1], fields[3])
    phrase = sentence.phrases[-1]
    phrase.morphemes.append(morpheme)
    if phrase.base_phrases:
        phrase.base_phrases[-1].morphemes.append(morpheme)


def _close_ne(sentences: list[Sentence], value: str | None) -> None:
    """Record the NE of the base phrase that just ended (its morphemes are read)."""
    if value is not None and sentences:
        sentences[-1].named.append((value, len(sentences[-1].morphemes)))


def _parent(line: str, number: int, path: Path) -> int:
    parts = line.split(" ")
    head = parts[1] if len(parts) > 1 else ""
    digits = head[:-1]
    if not head or head[-1] not in "DPAI" or not digits.lstrip("-").isdigit():
        raise HakariInputError(f"line {number}: no dependency in {line[:40]!r}", file=str(path))
    return int(digits)

"""Rows of llm-jp-eval v1.3.0's Wikipedia sets (`datasets/wiki/*.py`), one per document
of the Wikipedia Annotated Corpus (`knp.py` parses it):

- `wiki_reading`: `text`, the document's text, and `reading`, in hiragana: a morpheme's
  reading, "" where it is a space and the text is not (熟字訓), the part before "/"
  (にほん/にっぽん), capital letters A–Z as their Japanese names (えー, びー, …);
- `wiki_dependency`: `text` and `dependencies`, one "child -> parent" line per phrase
  that has a parent (the phrases' texts, in phrase order);
  for both, sentences whose comment holds `括弧始` (a parenthesised part cut out) are
  left out;
- `wiki_ner`: `text`, where a parenthesised part cut out (`括弧削除`, then a sentence
  with `括弧始:X 括弧終:Y 括弧位置:N`) is put back at N between X and Y, and
  `entities`, "name（種類）" of every named entity of every sentence, space-separated
  (OPTIONAL ones and unknown categories left out). As rhoknp finds an entity: the
  feature's text must be the text of a run of the sentence's morphemes that ends no
  later than its base phrase, the latest such end first, then the shortest run;
  an entity with no such run is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hakari.errors import HakariInputError
from hakari.tasks.readers.knp import Sentence, documents

_ALPHABET_NAMES = dict(
    zip(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "えー びー しー でぃー いー えふ じー えいち あい じぇー けー える えむ えぬ おー ぴー "
        "きゅー あーる えす てぃー ゆー ぶい だぶりゅー えっくす わい ぜっと".split(" "),
        strict=True,
    )
)
NE_NAMES = {
    "ORGANIZATION": "組織名",
    "PERSON": "人名",
    "LOCATION": "地名",
    "ARTIFACT": "固有物名",
    "DATE": "日付表現",
    "TIME": "時刻表現",
    "MONEY": "金額表現",
    "PERCENT": "割合表現",
}
_NE_VALUE = re.compile(r"(\w+):(.+)", re.DOTALL)
_PARENTHESIS = re.compile(r"括弧始:(\S+) 括弧終:(\S+) 括弧位置:(\d+)")


def read_wiki_reading(id_file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc_id, sentences in documents(id_file):
        kept = [s for s in sentences if "括弧始" not in s.comment]
        reading = "".join(_reading(m.text, m.reading) for s in kept for m in s.morphemes)
        text = "".join(s.text for s in kept)
        yield f"document {doc_id}", {"id": doc_id, "text": text, "reading": reading}


def read_wiki_dependency(id_file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc_id, sentences in documents(id_file):
        kept = [s for s in sentences if "括弧始" not in s.comment]
        lines = [
            f"{p.text} -> {s.phrases[p.parent].text}"
            for s in kept
            for p in s.phrases
            if p.parent != -1
        ]
        text = "".join(s.text for s in kept)
        yield f"document {doc_id}", {"id": doc_id, "text": text, "dependencies": "\n".join(lines)}


def read_wiki_ner(id_file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc_id, sentences in documents(id_file):
        entities = [e for s in sentences for e in _entities(s)]
        text = text_with_parentheses(sentences, f"document {doc_id}", id_file)
        yield f"document {doc_id}", {"id": doc_id, "text": text, "entities": " ".join(entities)}


def _reading(surface: str, reading: str) -> str:
    if reading in (" ", "　") and surface not in (" ", "　"):
        return ""
    first = reading.split("/")[0]
    if first and all(ch in _ALPHABET_NAMES for ch in first):
        return "".join(_ALPHABET_NAMES[ch] for ch in first)
    return first


def _entities(sentence: Sentence) -> Iterator[str]:
    texts = [m.text for m in sentence.morphemes]
    for value, end in sentence.named:
        match = _NE_VALUE.fullmatch(value)
        if match is None or match.group(1) not in NE_NAMES:
            continue  # OPTIONAL, an unknown category, or no category
        name = match.group(2)
        for stop in range(end, 0, -1):
            starts = (i for i in range(stop - 1, -1, -1) if "".join(texts[i:stop]) == name)
            if next(starts, None) is not None:
                yield f"{name}（{NE_NAMES[match.group(1)]}）"
                break


def text_with_parentheses(sentences: list[Sentence], where: str, id_file: Path) -> str:
    out, i = "", 0
    while i < len(sentences):
        text = sentences[i].text
        if "括弧削除" in sentences[i].comment:
            i += 1
            match = _PARENTHESIS.search(sentences[i].comment) if i < len(sentences) else None
            if match is None:
                raise HakariInputError(
                    f"{where}: 括弧削除 without its parenthesis", file=str(id_file)
                )
            pos = int(match.group(3))
            text = text[:pos] + match.group(1) + sentences[i].text + match.group(2) + text[pos:]
        out += text
        i += 1
    return out

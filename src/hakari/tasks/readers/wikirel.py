"""Rows of llm-jp-eval v1.3.0's Wikipedia relation sets (`datasets/wiki/pas.py` and
`wiki/coreference.py`), one per document of the Wikipedia Annotated Corpus, from the
corpus's `<rel type="…" target="…" sid="…" id="…"/>` tags as rhoknp 1.8.2 reads them
(`knp.py` parses the files; `entities.py` follows rhoknp's coreference entities):

- `wiki_pas`: `text`, the document's text with its parenthesised parts put back (as
  `wiki_ner`), and `pas`, one line per predicate (base phrases in document order) that
  has an argument: the predicate's phrase without its leading particles, symbols and
  copulas (助詞, 特殊, 判定詞) and trailing particles and symbols, then ` 格：項` for each
  argument of the cases ガ デ ト ニ ヘ ヲ カラ ガ２ (written ガ) マデ ヨリ, in that order.
  An argument is a rel of that case whose target base phrase is found in the document
  (`sid`, or the predicate's sentence when `sid=""`; `id` in range), not in the
  predicate's own phrase, not marked optional by a later `target="なし"` of its case,
  counted once; exophora (no `sid`) and coreference-expanded arguments are not listed.
  An argument's text is its base phrase widened over the neighbouring base phrases of
  its phrase that depend on it, stripped of particles, symbols and copulas at both ends.
- `wiki_coreference`: sentences whose comment holds `括弧始` left out; `text` the rest,
  and `coreference`, one line per group of two or more base phrases that refer to the
  same set of entities (identity `=` relations, `≒` ones kept apart, as rhoknp merges
  them), their texts (as an argument's) space-separated, groups in the order of their
  first base phrase.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hakari.tasks.readers.entities import Entities, Unit
from hakari.tasks.readers.knp import Morpheme, Sentence, documents
from hakari.tasks.readers.wiki import text_with_parentheses

PAS_CASES = ("ガ", "デ", "ト", "ニ", "ヘ", "ヲ", "カラ", "ガ２", "マデ", "ヨリ")
_REL = re.compile(
    r'<rel type="(?P<type>\S+?)"( mode="(?P<mode>\S+?)")? target="(?P<target>.+?)"'
    r'( sid="(?P<sid>.*?)" id="(?P<id>\d+?)")?/>'
)
_EDGE = ("助詞", "特殊", "判定詞")
_DIGITS = str.maketrans("0123456789", "０１２３４５６７８９")


@dataclass(frozen=True)
class Rel:
    type: str
    target: str
    sid: str | None  # None: an exophora (著者, 不特定:人, …) or "なし"
    index: int | None
    mode: str | None


def read_wiki_pas(id_file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc_id, sentences in documents(id_file):
        text = text_with_parentheses(sentences, f"document {doc_id}", id_file)
        lines = [line for unit in _units(sentences) if (line := _pas_line(sentences, unit))]
        yield f"document {doc_id}", {"id": doc_id, "text": text, "pas": "\n".join(lines)}


def read_wiki_coreference(id_file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc_id, all_sentences in documents(id_file):
        sentences = [s for s in all_sentences if "括弧始" not in s.comment]
        entities = Entities()
        for unit in _units(sentences):
            for rel in rels(sentences, unit):
                _follow(entities, sentences, unit, rel)
        groups: dict[tuple[int, ...], list[Unit]] = {}
        for unit in _units(sentences):
            eids = entities.of(unit)
            if eids:
                groups.setdefault(tuple(sorted(eids)), []).append(unit)
        lines = [
            " ".join(mention_text(sentences, u) for u in units)
            for units in groups.values()
            if len(units) >= 2
        ]
        text = "".join(s.text for s in sentences)
        yield f"document {doc_id}", {"id": doc_id, "text": text, "coreference": "\n".join(lines)}


def rels(sentences: list[Sentence], unit: Unit) -> list[Rel]:
    """The rel tags of a base phrase, in order; `sid=""` is its own sentence."""
    features = sentences[unit[0]].base_phrases[unit[1]].features
    out = []
    for m in _REL.finditer(features):
        sid = sentences[unit[0]].sid if m["sid"] == "" else m["sid"]
        index = int(m["id"]) if m["id"] else None
        out.append(Rel(m["type"], m["target"], sid, index, m["mode"]))
    return out


def target(sentences: list[Sentence], rel: Rel) -> Unit | None:
    """The base phrase a rel points to: the first sentence with its sid, `id` in range."""
    if rel.sid is None or rel.index is None:
        return None
    for number, sentence in enumerate(sentences):
        if sentence.sid == rel.sid:
            return (number, rel.index) if rel.index < len(sentence.base_phrases) else None
    return None


def mention_text(sentences: list[Sentence], unit: Unit) -> str:
    """An argument's or a mention's text (llm-jp-eval's `convert_base_phrase_to_text`)."""
    sentence = sentences[unit[0]]
    units = sentence.base_phrases
    below = _descendants(sentence, unit[1])
    phrase = [i for i in _phrase_of(sentence, unit[1])]
    anchor = phrase.index(unit[1])
    kept = [unit[1]]
    for i in phrase[anchor + 1 :]:
        if i not in below:
            break
        kept.append(i)
    for i in reversed(phrase[:anchor]):
        if i not in below:
            break
        kept.append(i)
    morphemes = [m for i in sorted(kept) for m in units[i].morphemes]
    return _core(morphemes, _EDGE, _EDGE)


def _units(sentences: list[Sentence]) -> Iterator[Unit]:
    for number, sentence in enumerate(sentences):
        for index in range(len(sentence.base_phrases)):
            yield number, index


def _pas_line(sentences: list[Sentence], unit: Unit) -> str:
    arguments: dict[str, list[tuple[Unit, bool]]] = {}  # case -> (target, optional), in order
    for rel in rels(sentences, unit):
        if rel.type.startswith("="):
            continue
        case = rel.type.translate(_DIGITS)
        found = arguments.setdefault(case, [])
        if rel.sid is None:
            if rel.target == "なし":  # the arguments of the case so far are optional
                found[:] = [(u, True) for u, _ in found]
            continue
        argument = target(sentences, rel)
        if argument is not None and argument not in [u for u, _ in found]:
            found.append((argument, False))
    own = _phrase_of(sentences[unit[0]], unit[1])
    texts = [
        f" {'ガ' if case == 'ガ２' else case}：{mention_text(sentences, argument)}"
        for case in PAS_CASES
        for argument, optional in arguments.get(case, [])
        if not optional and not (argument[0] == unit[0] and argument[1] in own)
    ]
    phrase = [m for i in own for m in sentences[unit[0]].base_phrases[i].morphemes]
    predicate = _core(phrase, _EDGE, ("助詞", "特殊"))
    return f"{predicate}{''.join(texts)}" if predicate and texts else ""


def _follow(entities: Entities, sentences: list[Sentence], unit: Unit, rel: Rel) -> None:
    """One rel tag's effect on the entities, as rhoknp's base phrase applies it."""
    if rel.type.startswith("="):
        if rel.mode not in ("OR", "？"):
            if rel.sid is None:
                entities.corefer_exophora(unit, rel.target, rel.type.endswith("≒"))
            elif (other := target(sentences, rel)) is not None:
                entities.corefer(unit, other, rel.type.endswith("≒"))
        return
    if rel.sid is not None:
        if (argument := target(sentences, rel)) is not None:
            entities.ensure(argument)
    elif rel.target != "なし":
        entities.exophora(rel.target)


def _phrase_of(sentence: Sentence, index: int) -> list[int]:
    """The indices of the base phrases of the phrase that holds base phrase `index`."""
    start = 0
    for phrase in sentence.phrases:
        end = start + len(phrase.base_phrases)
        if start <= index < end:
            return list(range(start, end))
        start = end
    raise IndexError(index)


def _descendants(sentence: Sentence, index: int) -> set[int]:
    units = sentence.base_phrases
    out, todo = {index}, [index]
    while todo:
        head = todo.pop()
        for i, unit in enumerate(units):
            if unit.parent == head and i not in out:
                out.add(i)
                todo.append(i)
    return out


def _core(morphemes: list[Morpheme], lead: tuple[str, ...], tail: tuple[str, ...]) -> str:
    """The morphemes' text without the leading `lead` and trailing `tail` parts of
    speech; all of it when nothing would be left."""
    start = 0
    while start < len(morphemes) and morphemes[start].pos in lead:
        start += 1
    end = len(morphemes)
    while end > 0 and morphemes[end - 1].pos in tail:
        end -= 1
    core = "".join(m.text for m in morphemes[start:end])
    return core or "".join(m.text for m in morphemes)

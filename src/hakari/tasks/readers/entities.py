"""Coreference entities of one document, built from its rel tags as rhoknp 1.8.2 builds
them (`cohesion/coreference.py`, `units/base_phrase.py`), for `wiki_coreference`
(`wikirel.py`).

The one decision a reader must know: **the order of merges is rhoknp's, so the result
is.** A mention (a base phrase, `Unit`) refers to entities identically or, through a
`≒` relation, non-identically; an identity relation between two mentions merges their
entities (the target's into the source's, unless either side is non-identical or their
exophora referents differ). rhoknp walks every pair of the two mentions' entities in
the iteration order of a Python set of entities hashed by their integer ids, and each
merge can delete an entity the next pair names; so the entities here are those ids, in
sets built by the same operations, and the pairs come out in the same order. Entity ids
are rhoknp's: the next is one above the largest alive (0 for the first).
An exophora referent (著者, 読者, 不特定:人, …, with an optional number) is one entity
per document when it is the writer, the reader or numbered ("singleton"), else a new
one each time it is named.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

Unit = tuple[int, int]  # (sentence, base phrase index in the sentence)
Referent = tuple[str, str]  # (type, index) or ("OTHER", text)

_EXOPHORA = re.compile(r"^(著者|読者|不特定:人|不特定:物|不特定:状況|前文|後文)([０-９\d]*)$")


@dataclass
class _Entity:
    referent: Referent | None
    mentions: list[Unit] = field(default_factory=list)
    nonidentical: list[Unit] = field(default_factory=list)

    def all_mentions(self) -> list[Unit]:
        return self.mentions + [m for m in self.nonidentical if m not in self.mentions]


def referent(text: str) -> Referent:
    match = _EXOPHORA.match(text)
    if match is None:
        return ("OTHER", text)
    return (match[1], str(int(match[2])) if match[2] else "")


def _singleton(ref: Referent) -> bool:
    return ref[0] in ("著者", "読者") or (ref[0] != "OTHER" and ref[1] != "")


class Entities:
    """The entities of one document and each mention's (identical, non-identical) ids."""

    def __init__(self) -> None:
        self._entities: dict[int, _Entity] = {}
        self._identical: dict[Unit, set[int]] = {}
        self._nonidentical: dict[Unit, set[int]] = {}

    def of(self, unit: Unit) -> set[int]:
        """The ids of the entities `unit` refers to identically."""
        return self._identical.get(unit, set())

    def ensure(self, unit: Unit) -> None:
        """An argument's base phrase gets an entity of its own when it has none."""
        if not self.of(unit):
            self._add(self._new(None), unit, nonidentical=False)

    def exophora(self, text: str) -> int:
        """The entity of an exophora referent (found when it is a singleton)."""
        ref = referent(text)
        if _singleton(ref):
            for eid, entity in self._entities.items():
                if entity.referent == ref:
                    return eid
        return self._new(ref)

    def corefer(self, source: Unit, other: Unit, nonidentical: bool) -> None:
        """An `=` (or `=≒`) relation from `source` to the base phrase `other`."""
        self.ensure(source)
        if other == source:
            return
        self.ensure(other)
        for s, t in itertools.product(self._all(source), self._all(other)):
            if s in self._all(source) and t in self._all(other):
                self._merge(source, other, s, t, nonidentical)

    def corefer_exophora(self, source: Unit, text: str, nonidentical: bool) -> None:
        """An `=` relation from `source` to an exophora referent."""
        self.ensure(source)
        t = self.exophora(text)
        for s in self._all(source):
            if s in self._all(source) and t in self._entities:
                self._merge(source, None, s, t, nonidentical)

    def _all(self, unit: Unit) -> set[int]:
        return self._identical.get(unit, set()) | self._nonidentical.get(unit, set())

    def _new(self, ref: Referent | None) -> int:
        eid = max(self._entities) + 1 if self._entities else 0
        self._entities[eid] = _Entity(ref)
        return eid

    def _add(self, eid: int, unit: Unit, *, nonidentical: bool) -> None:
        entity = self._entities[eid]
        if nonidentical:
            if unit in entity.all_mentions():
                return
            self._nonidentical.setdefault(unit, set()).add(eid)
            entity.nonidentical.append(unit)
            return
        if unit in entity.nonidentical:
            entity.nonidentical.remove(unit)
            self._nonidentical[unit].remove(eid)
        if unit in entity.mentions:
            return
        self._identical.setdefault(unit, set()).add(eid)
        entity.mentions.append(unit)

    def _merge(self, source: Unit, other: Unit | None, s: int, t: int, nonidentical: bool) -> None:
        t_non = other is not None and t in self._nonidentical.get(other, set())
        s_non = s in self._nonidentical.get(source, set())
        if s == t:
            if not nonidentical and other is not None and not s_non and t_non:
                self._add(s, other, nonidentical=False)
            if not nonidentical and s_non and not t_non:
                self._add(s, source, nonidentical=False)
            return
        if other is not None:
            self._add(s, other, nonidentical=nonidentical or s_non)
        self._add(t, source, nonidentical=nonidentical or t_non)
        ref_s, ref_t = self._entities[s].referent, self._entities[t].referent
        if nonidentical or t_non or s_non or (ref_s and ref_t and ref_s != ref_t):
            return
        if ref_s is None:
            self._entities[s].referent = ref_t
        for unit in self._entities[t].all_mentions():
            self._add(s, unit, nonidentical=t in self._nonidentical.get(unit, set()))
        self._delete(t)

    def _delete(self, eid: int) -> None:
        entity = self._entities.pop(eid)
        for unit in entity.mentions:
            self._identical[unit].remove(eid)
        for unit in entity.nonidentical:
            self._nonidentical[unit].remove(eid)

"""Readers of the file formats jaster's sets ship in, one module per format: each yields
`(where, row)`, where `where` names the row in its file ("line 12", "question 3") for
error messages, and `row` maps field names to text as llm-jp-eval's processors read it.
A file that does not parse is one `HakariInputError` naming the file and the place.

Modules: `tsv.py` (Jamp, JaNLI, JSICK, MGSM), `csvfile.py` (JCommonsenseMorality),
`xml.py` (JSeM, NIILC), `jsonfile.py` (JEMHopQA, MAWPS-ja), `knp.py` (the Wikipedia
annotated corpus's KNP files), `wiki.py` (its reading, NER and dependency rows),
`wikirel.py` (its predicate-argument and coreference rows) with `entities.py` (rhoknp's
coreference entities).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hakari.tasks.readers.csvfile import read_csv
from hakari.tasks.readers.jsonfile import read_json, read_mawps_shots, read_mawps_test
from hakari.tasks.readers.tsv import read_mgsm_tsv, read_tsv
from hakari.tasks.readers.wiki import read_wiki_dependency, read_wiki_ner, read_wiki_reading
from hakari.tasks.readers.wikirel import read_wiki_coreference, read_wiki_pas
from hakari.tasks.readers.xml import read_jsem_xml, read_niilc_xml

Row = dict[str, Any]
ReadRows = Callable[[Path], Iterator[tuple[str, Row]]]

READERS: dict[str, ReadRows] = {
    "tsv": read_tsv,
    "csv": read_csv,
    "mgsm_tsv": read_mgsm_tsv,
    "json": read_json,
    "niilc_xml": read_niilc_xml,
    "jsem_xml": read_jsem_xml,
    "mawps_shots": read_mawps_shots,
    "mawps_test": read_mawps_test,
    "wiki_reading": read_wiki_reading,
    "wiki_dependency": read_wiki_dependency,
    "wiki_ner": read_wiki_ner,
    "wiki_pas": read_wiki_pas,
    "wiki_coreference": read_wiki_coreference,
}

__all__ = ["READERS", "ReadRows", "Row"]

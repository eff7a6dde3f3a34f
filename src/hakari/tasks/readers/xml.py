"""NIILC's and JSeM's XML, read as llm-jp-eval v1.3.0 reads them through `xmltodict`:
an element's text is stripped at both ends, and an empty element has no text (None).

NIILC: one row per `<question>`: `text`, and `answer` = its `<answer>` texts joined with
"," (empty ones left out) when there are several, else the one answer's text.
JSeM: one row per `<problem>`: `answer` (the attribute), `premise` = the `<script>` texts
of its `<p>` elements joined without separator, `hypothesis` = the `<h>`'s `<script>`.
Parsed with the standard library's expat parser, which fetches no external DTD or
entity. A file that declares an entity (`<!ENTITY`: the "billion laughs" expansion, an
external entity reading a local file) is refused before it is parsed, as defusedxml
refuses it by default; a DOCTYPE alone is kept, since each JSeM file names its DTD
(`<!DOCTYPE jsem-dataset SYSTEM "jsem.dtd">`, not read). defusedxml itself is not a
dependency of hakari (it is installed only with nltk, an optional extra's).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hakari._util.infiles import read_input
from hakari.errors import HakariInputError


def _root(path: Path) -> ET.Element:
    try:
        data = read_input(path)
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise HakariInputError("not UTF-8 text; save the file as UTF-8", file=str(path)) from None
    except OSError as exc:
        raise HakariInputError(f"cannot read the file: {exc.strerror}", file=str(path)) from None
    if "<!ENTITY" in text:
        raise HakariInputError(
            "declares an XML entity (<!ENTITY: entity expansion or an external entity); "
            "refused, the sets' files declare none",
            file=str(path),
        )
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        raise HakariInputError(f"not well-formed XML: {exc}", file=str(path)) from None


def _text(element: ET.Element | None) -> str | None:
    """xmltodict's value of a leaf element: its stripped text, None when empty."""
    if element is None:
        return None
    return (element.text or "").strip() or None


def read_niilc_xml(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, question in enumerate(_root(path).iter("question")):
        answers = question.findall("answers/answer")
        texts = [_text(a) for a in answers]
        answer = ",".join(t for t in texts if t) if len(texts) > 1 else (texts or [None])[0]
        yield (
            f"question {i} ({question.get('id', '?')})",
            {"id": question.get("id"), "text": _text(question.find("text")), "answer": answer},
        )


def read_jsem_xml(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, problem in enumerate(_root(path).iter("problem")):
        where = f"problem {i} ({problem.get('jsem_id', '?')})"
        texts = [_text(p.find("script")) for p in problem.findall("p")]
        premises = [t for t in texts if t is not None]
        hypothesis = _text(problem.find("h/script"))
        yield (
            where,
            {
                "jsem_id": problem.get("jsem_id"),
                "answer": problem.get("answer"),
                # None (refused where the row is used) when a text is missing
                "premise": "".join(premises) if premises and len(premises) == len(texts) else None,
                "hypothesis": hypothesis,
            },
        )

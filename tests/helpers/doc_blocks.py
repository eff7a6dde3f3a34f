"""The fenced code blocks of a Markdown page, with the hidden notes that tell the tests how
to run each one (a documented example is a test: tests/docs/test_code_blocks.py).

A note is an HTML comment on the lines right above a fence (invisible on GitHub and on the
site), one directive per comment:

    <!-- test: replace "OLD" "NEW" -->   the test runs the block with OLD replaced by NEW
                                         (to shrink it: "--limit 200" -> "--limit 2", or a
                                         `fake:` model where a real one adds only time)
    <!-- test: setup COMMAND -->         a bash command run before the block, to make an
                                         input the reader brings (their own data file)
    <!-- test: skip REASON -->           not run, for REASON (a GPU, a server, the network)

Languages: `bash` blocks run in bash, `python` blocks in the venv's Python, `yaml` blocks
are task files (`hakari tasks show` loads them); `text` blocks are output or syntax shown,
not code. A fence without a language is an error, so nothing is left out unnoticed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

RUN = ("bash", "python", "yaml")
SHOWN = ("text",)
_FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)\s*$")
_NOTE = re.compile(r"^\s*<!--\s*test:\s*(.*?)\s*-->\s*$")
_REPLACE = re.compile(r'^replace\s+"((?:[^"\\]|\\.)*)"\s+"((?:[^"\\]|\\.)*)"$')


@dataclass
class Block:
    page: str
    line: int
    language: str
    code: str
    skip: str | None = None
    setup: list[str] = field(default_factory=list)
    replacements: list[tuple[str, str]] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def runnable(self) -> str:
        """The code as the test runs it: every replacement applied, each one required to
        match (a note that no longer matches its block is a broken test, not a no-op)."""
        code = "".join(f"{command}\n" for command in self.setup) + self.code
        for old, new in self.replacements:
            if old not in self.code:
                raise AssertionError(f"{self.where}: the note's {old!r} is not in the block")
            code = code.replace(old, new)
        return code


def blocks(path: Path, page: str) -> list[Block]:
    """The fenced blocks of `path`, each with its notes."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    notes: list[str] = []
    i = 0
    while i < len(lines):
        note = _NOTE.match(lines[i])
        fence = _FENCE.match(lines[i])
        if note:
            notes.append(note.group(1))
        elif fence:
            indent, ticks, language = fence.groups()
            end = i + 1
            while end < len(lines) and lines[end].strip() != ticks:
                end += 1
            body = [line[len(indent) :] for line in lines[i + 1 : end]]
            found.append(_with_notes(Block(page, i + 1, language, "\n".join(body) + "\n"), notes))
            notes = []
            i = end
        elif lines[i].strip():
            notes = []  # a note belongs to the fence right below it
        i += 1
    return found


def _with_notes(block: Block, notes: list[str]) -> Block:
    for note in notes:
        if note.startswith("skip"):
            block.skip = note[len("skip") :].strip()
            if not block.skip:
                raise AssertionError(f"{block.where}: a skip note needs its reason")
            continue
        if note.startswith("setup "):
            block.setup.append(note[len("setup ") :])
            continue
        match = _REPLACE.match(note)
        if match is None:
            raise AssertionError(f"{block.where}: unknown test note {note!r}")
        old, new = (g.replace('\\"', '"') for g in match.groups())
        block.replacements.append((old, new))
    return block

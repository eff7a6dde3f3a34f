"""The on-disk cache of n-gram tables, built once per pfgen-bench data version.

Layout: `<cache>/pfgen/tables/v<FORMAT>-<fingerprint>/` with `manifest.json` (questions,
rules, sources) and one uncompressed `.npz` per question, read with `allow_pickle=False`.
The fingerprint is the reference scorer's `metadata_hash` of the question files, so
editing any `Q??.json` selects a fresh directory. A directory is written under a
temporary name and renamed into place when complete, so a killed build leaves nothing
that looks valid.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hakari._util.atomic import staged_folder
from hakari.backends.cache import default_cache_dir
from hakari.errors import HakariInputError
from hakari.pfgen.data import (
    Question,
    data_fingerprint,
    load_question_file,
    question_files,
    resolve_data_dir,
)
from hakari.pfgen.ngram import MAX_N, NgramTable, build_table

FORMAT_VERSION = 1


@dataclass
class TableSet:
    """The questions of one data version and lazy access to their tables."""

    directory: Path
    fingerprint: str
    questions: list[Question]
    built_now: bool = False

    def by_text(self) -> dict[str, Question]:
        return {q.question: q for q in self.questions}

    def load(self, question: Question) -> NgramTable:
        return _read_table(self.directory / f"{question.question_id}.npz", question)


def tables_root(cache_dir: Path | None) -> Path:
    return (cache_dir or default_cache_dir()) / "pfgen" / "tables"


def open_tables(
    data_dir: Path,
    cache_dir: Path | None = None,
    *,
    on_build: Callable[[int, int, str], None] | None = None,
) -> TableSet:
    """The tables for `data_dir`, built (and cached) first if needed."""
    data_dir = resolve_data_dir(data_dir)
    fingerprint = data_fingerprint(data_dir)
    directory = tables_root(cache_dir) / f"v{FORMAT_VERSION}-{fingerprint}"
    manifest = directory / "manifest.json"
    if manifest.is_file():
        questions = _read_manifest(manifest, fingerprint)
        if questions is not None:
            return TableSet(directory, fingerprint, questions)
        shutil.rmtree(directory, ignore_errors=True)
    _build_directory(data_dir, directory, fingerprint, on_build)
    questions = _read_manifest(manifest, fingerprint)
    assert questions is not None
    return TableSet(directory, fingerprint, questions, built_now=True)


def _build_directory(
    data_dir: Path,
    directory: Path,
    fingerprint: str,
    on_build: Callable[[int, int, str], None] | None,
) -> None:
    def built(folder: Path) -> bool:  # a concurrent build published first
        return (folder / "manifest.json").is_file()

    with staged_folder(directory, complete=built) as staging:
        files = question_files(data_dir)
        entries = []
        seen: dict[str, Path] = {}
        for done, path in enumerate(files):
            if on_build is not None:
                on_build(done, len(files), path.name)
            question, references = load_question_file(path)
            if question.question in seen:
                raise HakariInputError(
                    f"the same question text is also in {seen[question.question].name}",
                    file=str(path),
                    field="question",
                )
            seen[question.question] = path
            _write_table(staging / f"{question.question_id}.npz", build_table(references))
            entries.append(
                {
                    "question_id": question.question_id,
                    "question": question.question,
                    "keywords": question.keywords,
                    "sources": list(question.sources),
                }
            )
        if on_build is not None:
            on_build(len(files), len(files), "")
        manifest = {"format": FORMAT_VERSION, "fingerprint": fingerprint, "questions": entries}
        (staging / "manifest.json").write_text(
            json.dumps(manifest, ensure_ascii=False), encoding="utf-8"
        )


def _read_manifest(path: Path, fingerprint: str) -> list[Question] | None:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if manifest["format"] != FORMAT_VERSION or manifest["fingerprint"] != fingerprint:
            return None
        return [
            Question(
                question_id=q["question_id"],
                question=q["question"],
                keywords=q["keywords"],
                sources=tuple(q["sources"]),
            )
            for q in manifest["questions"]
        ]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _smallest_unsigned(values: np.ndarray) -> np.ndarray:
    top = int(values.max(initial=0))
    for dtype in (np.uint16, np.uint32):
        if top < np.iinfo(dtype).max:
            return values.astype(dtype)
    return values.astype(np.uint64)


def _write_table(path: Path, table: NgramTable) -> None:
    arrays: dict[str, np.ndarray] = {
        "source_sizes": table.source_sizes,
        "alphabet": table.alphabet,
        "baselines": table.baselines,
    }
    for n in range(len(table.keys)):
        arrays[f"keys{n + 1}"] = _smallest_unsigned(table.keys[n])
        arrays[f"counts{n + 1}"] = table.counts[n]
    with path.open("wb") as fh:
        np.savez(fh, allow_pickle=False, **arrays)


def _read_table(path: Path, question: Question) -> NgramTable:
    try:
        with np.load(path, allow_pickle=False) as npz:
            keys = [npz[f"keys{n}"].astype(np.int64) for n in range(1, MAX_N + 1)]
            counts = [npz[f"counts{n}"] for n in range(1, MAX_N + 1)]
            table = NgramTable(
                sources=question.sources,
                source_sizes=npz["source_sizes"].astype(np.int64),
                alphabet=npz["alphabet"].astype(np.int64),
                keys=keys,
                counts=counts,
                baselines=npz["baselines"].astype(np.float64),
            )
    except (OSError, KeyError, ValueError) as exc:
        raise HakariInputError(
            f"the cached n-gram table is unreadable ({exc}); delete the folder to rebuild it",
            file=str(path),
        ) from exc
    k = len(question.sources)
    if any(c.shape != (len(key), k) for key, c in zip(keys, counts, strict=True)):
        raise HakariInputError(
            "the cached n-gram table does not match its manifest; delete the folder",
            file=str(path),
        )
    return table

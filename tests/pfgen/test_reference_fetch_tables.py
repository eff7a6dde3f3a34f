"""build-reference on small data, fetch-data from a local archive, the table cache."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from hakari.errors import HakariInputError
from hakari.pfgen.data import data_fingerprint
from hakari.pfgen.fetch import extract_data, fetch_data
from hakari.pfgen.reference_build import (
    build_reference_set,
    closest_to_length,
    drop_ng,
    drop_rare_ngrams,
    representative,
    write_data_dir,
)
from hakari.pfgen.tables import open_tables


def test_ng_filter_drops_matching_answers():
    answers = ["重なる回数は22回です。", "重なる回数は23回です。", "11回重なります。"]
    # "11 or 23 not after a 2", written without a look-behind: NG rules run on generated
    # answers, so they are matched in linear time (RE2), which has no look-arounds
    assert drop_ng(answers, [r"(?:^|[^2])(11|23)回"]) == ["重なる回数は22回です。"]


def test_rare_5gram_filter_removes_answers_with_a_singleton_5gram():
    common = "関ヶ原の戦いは1600年です。"
    rare = "関ヶ原の戦い（せっきがはら）は1600年です。"
    kept = drop_rare_ngrams([common, common, rare, "関ヶ原の戦いは1600年です。"])
    assert rare not in kept and kept.count(common) == 3


def test_length_selection_keeps_the_closest_in_input_order():
    answers = ["a" * 90, "b" * 130, "c" * 101, "d" * 100, "e" * 70]
    assert closest_to_length(answers, 100, 3) == ["a" * 90, "c" * 101, "d" * 100]


def test_representative_selection_spans_the_ranking_and_is_deterministic():
    answers = [f"日本の首都は東京です。{i}" if i % 3 else f"首都{i}は京都？" for i in range(30)]
    chosen = representative(answers, 5)
    assert len(chosen) == 5 and chosen == representative(answers, 5)
    assert any("東京" in a for a in chosen) and any("京都" in a for a in chosen)
    assert representative(answers[:3], 5) == answers[:3]


def test_build_reference_set_and_score_with_it(small_data: Path, tmp_path: Path):
    generated = {
        "富士山の高さは？": ["富士山の高さは3776メートルです。"] * 6
        + ["富士山の高さは3776メートルです。高い！"]
        + ["富士山の高さは3000メートルです。"] * 2,
    }
    rules = {"富士山の高さは？": ["3000"]}
    reference = build_reference_set(generated, ng_rules=rules, pool=5, k=3)
    (counts,) = reference.counts
    assert (counts.input, counts.after_ng, counts.after_rare_ngrams) == (9, 7, 6)
    assert (counts.after_length, counts.selected) == (5, 3)
    out = tmp_path / "new-data"
    write_data_dir(small_data, out, reference, source="X", replace=False)
    q01 = json.loads((out / "Q01.json").read_text(encoding="utf-8"))
    assert list(q01["answers"]) == ["P", "S", "X"] and len(q01["answers"]["X"]) == 3
    tables = open_tables(out, tmp_path / "cache")
    assert tables.by_text()["富士山の高さは？"].sources == ("P", "S", "X")
    with pytest.raises(HakariInputError, match="no generated answers"):
        write_data_dir(small_data, tmp_path / "other", reference, source="X", replace=True)


def _archive(folder: Path, extra: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=f"pfgen-bench-abc/data/{path.relative_to(folder)}")
        for name, payload in extra.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()


def test_fetch_data_from_a_local_archive(small_data: Path, tmp_path: Path):
    archive = tmp_path / "repo.tar.gz"
    archive.write_bytes(
        _archive(
            small_data,
            {
                "pfgen-bench-abc/LICENSE": b"Apache",
                "pfgen-bench-abc/pfgen.py": b"code we do not keep",
                "pfgen-bench-abc/data/../../escape.txt": b"nope",
            },
        )
    )
    fingerprint = data_fingerprint(small_data)
    path = fetch_data(tmp_path / "cache", url=str(archive), expected_fingerprint=fingerprint)
    assert sorted(p.name for p in path.iterdir()) == ["Q01.json", "Q02.json", "questions.jsonl"]
    assert (path.parent / "LICENSE").read_bytes() == b"Apache"
    assert not (path.parent / "pfgen.py").exists()
    assert not list(tmp_path.rglob("escape.txt"))
    assert data_fingerprint(path) == fingerprint
    # present now: no second download even with a bad URL
    assert fetch_data(tmp_path / "cache", url="/nonexistent.tar.gz") == path


def test_fetch_data_refuses_a_different_data_version(small_data: Path, tmp_path: Path):
    archive = tmp_path / "repo.tar.gz"
    archive.write_bytes(_archive(small_data, {}))
    with pytest.raises(HakariInputError, match="hash to"):
        fetch_data(tmp_path / "cache", url=str(archive))  # expects the pinned upstream hash
    with pytest.raises(HakariInputError, match="tar archive"):
        extract_data(b"not a tarball", tmp_path / "x", source="bytes")


def test_table_cache_is_reused_and_invalidated_by_the_data(small_data: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    first = open_tables(small_data, cache)
    assert first.built_now
    again = open_tables(small_data, cache)
    assert not again.built_now and again.directory == first.directory
    table = again.load(again.questions[0])
    assert table.baselines.dtype == np.float64
    for npz in first.directory.glob("*.npz"):
        with np.load(npz, allow_pickle=False) as arrays:  # no object arrays inside
            assert all(arrays[name].dtype != object for name in arrays.files)
    question = json.loads((small_data / "Q02.json").read_text(encoding="utf-8"))
    question["answers"]["P"].append("首都は東京都です。")
    (small_data / "Q02.json").write_text(json.dumps(question, ensure_ascii=False), "utf-8")
    changed = open_tables(small_data, cache)
    assert changed.built_now and changed.directory != first.directory

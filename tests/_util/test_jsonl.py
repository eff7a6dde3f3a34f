"""The one JSONL reader's lenient form: what a run's samples.jsonl and the logs are read with."""

from __future__ import annotations

from pathlib import Path

import pytest

from hakari._util import jsonl
from hakari._util.jsonl import iter_jsonl_lenient, read_jsonl_lenient
from hakari.errors import HakariInputError


def test_a_line_cut_by_a_kill_is_skipped_and_the_rest_read(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2, "outp\n\xff\xfe\n[1]\n{"a": 3}\n')
    assert [row["a"] for row in iter_jsonl_lenient(path)] == [1, 3]
    assert read_jsonl_lenient(tmp_path / "missing.jsonl") == []


def test_keep_sees_each_line_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n', encoding="utf-8")
    seen: list[str] = []

    def keep(text: str) -> bool:
        seen.append(text)
        return '"a": 2' in text

    assert list(iter_jsonl_lenient(path, keep=keep)) == [{"a": 2}]
    assert seen == ['{"a": 1}\n', '{"a": 2}\n']


def test_an_endless_line_is_one_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 16)
    path = tmp_path / "samples.jsonl"
    path.write_text('{"a": 1}\n{"output": "' + "x" * 64 + '"}\n', encoding="utf-8")
    with pytest.raises(HakariInputError, match="line 2 is longer") as caught:
        list(iter_jsonl_lenient(path))
    assert str(path) in str(caught.value)

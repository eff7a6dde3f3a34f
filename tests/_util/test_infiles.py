"""`hakari._util.infiles`: the one way a file hakari was given is opened. A regular file
reads as `Path.read_text` / `read_bytes` / `open` read it; anything else is one
`HakariInputError` naming the file and what it is, without waiting on it and without
leaving a descriptor open; the open's own errors stay what they were."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hakari._util.infiles import open_input, open_input_text, read_input, read_input_text
from hakari.errors import HakariInputError

TEXT = "\ufeff一行目\r\nsecond\rthird\n"


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_regular_file_reads_as_pathlib_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(TEXT.encode("utf-8"))
    assert read_input(path) == path.read_bytes()
    assert read_input_text(path) == path.read_text(encoding="utf-8")
    assert read_input_text(path, encoding="utf-8-sig") == path.read_text(encoding="utf-8-sig")
    with open_input_text(path, newline="") as fh, path.open(encoding="utf-8", newline="") as ref:
        assert fh.readlines() == ref.readlines()
    with open_input(path) as fh:
        assert fh.read(3) == TEXT.encode("utf-8")[:3]


def make(tmp_path: Path, kind: str) -> Path:
    if kind == "a FIFO":
        os.mkfifo(tmp_path / "pipe")
        return tmp_path / "pipe"
    if kind == "a folder":
        return tmp_path
    link = tmp_path / "zeros"
    link.symlink_to("/dev/zero" if kind == "a device" else "/dev/null")
    return link


@pytest.mark.parametrize("kind", ["a FIFO", "a folder", "a device", "a device (/dev/null)"])
def test_anything_else_is_one_error_naming_it(tmp_path: Path, kind: str) -> None:
    path = make(tmp_path, kind)
    before = open_descriptors()
    for read in (read_input, read_input_text, open_input, open_input_text):
        with pytest.raises(HakariInputError) as raised:
            read(path, field="--data-dir")  # type: ignore[operator]
        message = str(raised.value)
        assert f"not a regular file ({kind.split(' (')[0]})" in message
        assert str(path) in message and "--data-dir" in message
    assert open_descriptors() == before


def test_the_opens_own_errors_stay_as_they_were(tmp_path: Path) -> None:
    """Callers word a missing file themselves ("data file not found", ...)."""
    with pytest.raises(FileNotFoundError):
        read_input(tmp_path / "missing.json")


def test_a_file_past_its_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "zeros.tsv"
    with path.open("wb") as fh:
        fh.truncate((2 << 20) + 1)  # sparse: no disk
    assert len(read_input(path, limit=(2 << 20) + 1)) == (2 << 20) + 1
    before = open_descriptors()
    with pytest.raises(HakariInputError, match=r"2,097,153 bytes, larger than the 2 MiB"):
        read_input_text(path, limit=2 << 20)
    with pytest.raises(HakariInputError, match=r"larger than the 1,000 bytes"):
        open_input(path, limit=1000)
    assert open_descriptors() == before

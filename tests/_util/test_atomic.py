"""The one output writer (`hakari._util.atomic`): whole or not at all, through links, in
place on devices and open descriptors, never over what it must not replace, and no
temporary file left whatever fails."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import pytest

from hakari._util.atomic import (
    Output,
    StagedFile,
    atomic_open,
    check_output,
    publish_together,
    staged_files,
    staged_folder,
    write_json_atomic,
    write_text_atomic,
)
from hakari.errors import HakariInputError


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_an_error_inside_the_block_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write("new, half")
        raise RuntimeError("the caller failed")
    assert target.read_text() == "old" and names(tmp_path) == ["out.txt"]


def test_a_dangling_link_is_written_through(tmp_path: Path) -> None:
    link = tmp_path / "latest.json"
    link.symlink_to("runs/1/out.json")
    write_json_atomic(link, {"a": 1})
    assert link.is_symlink() and (tmp_path / "runs/1/out.json").read_text() == '{\n  "a": 1\n}'


def test_an_open_descriptor_of_this_process_is_appended_to(tmp_path: Path) -> None:
    """`/proc/self/fd/N` (what /dev/stdout is): written after what is there, not
    truncated, not replaced."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("no /proc/self/fd")
    path = tmp_path / "log.txt"
    with path.open("w") as fh:
        fh.write("printed first\n")
        fh.flush()
        write_text_atomic(Path(f"/proc/self/fd/{fh.fileno()}"), "then the output\n")
        fh.write("printed after\n")
    assert path.read_text() == "printed first\nthen the output\nprinted after\n"


def test_a_socket_is_refused(tmp_path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s"))
        with pytest.raises(HakariInputError, match="not a regular file"):
            check_output(tmp_path / "s", "--json")
    finally:
        sock.close()


def test_a_path_below_a_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(HakariInputError, match="a-file is not a folder") as info:
        check_output(tmp_path / "a-file" / "deeper" / "out.json", "--json")
    assert info.value.field == "--json"


def test_staged_files_appear_together_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "samples.jsonl", tmp_path / "results.json"
    first.write_text("old samples")
    second.write_text("old results")
    staged = [StagedFile(Output(first, owner=True)), StagedFile(Output(second, owner=True))]
    for file in staged:
        file.write("new")
    calls = {"n": 0}

    def fsync(fd: int) -> None:  # the second file's content cannot be made durable
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(HakariInputError, match="No space left on device"):
        publish_together(staged)
    assert first.read_text() == "old samples" and second.read_text() == "old results"
    assert names(tmp_path) == ["results.json", "samples.jsonl"]


def test_text_utf8_cannot_encode_is_written_as_its_escape(tmp_path: Path) -> None:
    import json

    write_json_atomic(tmp_path / "x.json", {"answer": "a\ud800b"})
    raw = (tmp_path / "x.json").read_bytes()
    assert b"a\\ud800b" in raw and json.loads(raw)["answer"] == "a\ud800b"


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_staged_folder_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "tables" / "v1"
    with staged_folder(target) as staging:
        (staging / "a.npz").write_bytes(b"a")
        assert not target.exists()  # nothing visible while it is built
    assert sorted(p.name for p in target.iterdir()) == ["a.npz"]
    with pytest.raises(RuntimeError), staged_folder(tmp_path / "tables" / "v2") as staging:
        (staging / "half").write_bytes(b"")
        raise RuntimeError("killed while building")
    assert not (tmp_path / "tables" / "v2").exists()
    assert _hidden(tmp_path / "tables") == []  # no staging folder left behind


def test_a_staged_folder_keeps_a_complete_one_and_replaces_the_rest(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / "MARKER").write_text("done")
    with staged_folder(target, complete=lambda f: (f / "MARKER").is_file()) as staging:
        (staging / "MARKER").write_text("mine")  # another process published first
    assert (target / "MARKER").read_text() == "done"
    (target / "MARKER").unlink()
    (target / "partial").write_text("from a killed run")
    with staged_folder(target, complete=lambda f: (f / "MARKER").is_file()) as staging:
        (staging / "MARKER").write_text("mine")
    assert sorted(p.name for p in target.iterdir()) == ["MARKER"]
    assert _hidden(tmp_path) == []


def test_staged_files_replace_files_of_a_folder_and_keep_the_others(tmp_path: Path) -> None:
    (tmp_path / "checkpoint-1").mkdir()
    (tmp_path / "adapter_config.json").write_text("old")
    with staged_files(tmp_path) as staging:
        (staging / "adapter_config.json").write_text("new")
        (staging / "adapter_model.safetensors").write_bytes(b"w")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["adapter_config.json", "adapter_model.safetensors", "checkpoint-1"]
    assert (tmp_path / "adapter_config.json").read_text() == "new"
    with pytest.raises(RuntimeError), staged_files(tmp_path) as staging:
        (staging / "adapter_config.json").write_text("torn")
        raise RuntimeError
    assert (tmp_path / "adapter_config.json").read_text() == "new"
    assert _hidden(tmp_path) == []

"""Hostile jaster set files: each bad file a set reads is one `error:` line naming the
file (and the row or field where there is one), exit code 2, before any model loads
(the model here cannot load), never a traceback or a hang. The readers are
`hakari/tasks/readers/` (one per file format), the checks `tasks/jaster.py`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from hakari.tasks.jaster import SET_FILE_LIMIT
from hakari.tasks.readers.knp import KNP_FILE_LIMIT
from tests.helpers.cli import assert_one_line, invoke
from tests.helpers.deadline import within_deadline
from tests.helpers.tasks import jaster_task

HEADER = "num\tpremise\thypothesis\tgold_label\n"
GOOD_TSV = HEADER + "".join(f"{i}\tA{i}\tB{i}\tneutral\n" for i in range(5))
LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n'
    + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'
        for i in range(1, 10)
    )
    + ']>\n<jsem-dataset><problem jsem_id="1" answer="yes"><p><script>&lol9;</script></p>'
    "<h><script>x</script></h></problem></jsem-dataset>\n"
)
XXE = (
    '<?xml version="1.0"?>\n<!DOCTYPE q [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
    "<questions><question id='1'><text>&xxe;</text><answers><answer>a</answer></answers>"
    "</question></questions>\n"
)
NOT_UTF8 = "前提\t仮説\n".encode("shift_jis")


def set_file(folder: Path, reader: str, name: str, **change: Any) -> Path:
    """A set whose train split is a good TSV and whose test split is `name`, read by
    `reader`; `change` replaces keys of the task or of its `jaster` block."""
    (folder / "train.tsv").write_text(GOOD_TSV, encoding="utf-8")
    fields = {
        "tsv": ("{premise}", "gold_label"),
        "csv": ("{sent}", "label"),
        "mgsm_tsv": ("{question}", "answer_number"),
        "json": ("{question}", "answer"),
        "jsem_xml": ("{premise}", "answer"),
        "niilc_xml": ("{text}", "answer"),
        "wiki_reading": ("{text}", "reading"),
    }[reader]
    jaster = {
        "input": fields[0],
        "output": fields[1],
        "instruction": "答えてください。",
        "shots": [0, 4],
        "pools": [  # the file under test first: it is read before the train file
            {"files": [name], "reader": reader, "splits": {"test": 1.0}},
            {"files": ["train.tsv"], "reader": "tsv", "splits": {"train": 1.0}},
        ],
    }
    jaster.update({k: v for k, v in change.items() if k in jaster})
    task = jaster_task("hostile_jaster", jaster)
    task.update({k: v for k, v in change.items() if k in task})
    path = folder / "task.yaml"
    path.write_text(yaml.safe_dump(task, allow_unicode=True), encoding="utf-8")
    return path


def run(path: Path) -> tuple[int, str]:
    # never a hang: the run is made in a child with a deadline
    return within_deadline(lambda: invoke("--tasks", str(path), "--model", "hf:/nonexistent"))


def knp_corpus(folder: Path, document: str) -> str:
    (folder / "id").mkdir()
    (folder / "id" / "test.id").write_text("wiki00000001\n", encoding="utf-8")
    (folder / "knp" / "wiki0000").mkdir(parents=True)
    (folder / "knp" / "wiki0000" / "wiki00000001.knp").write_text(document, encoding="utf-8")
    return "id/test.id"


MORPHEME = "日本 にほん 日本 名詞 6 普通名詞 1 * 0 * 0 NIL"
CASES: dict[str, tuple[str, str, str | bytes, dict[str, Any], list[str]]] = {
    # case: (reader, file name, its content, change to the set, what the line must say)
    "row without its answer": (
        "tsv",
        "test.tsv",
        HEADER + "0\tP\tH\t\n",
        {},
        ["test.tsv", "line 2 has no answer"],
    ),
    "unknown metric name": (
        "tsv",
        "test.tsv",
        GOOD_TSV,
        {"metrics": ["exact_matsh"]},
        ["unknown metric 'exact_matsh'"],
    ),
    "fewer items than the shots": (
        "tsv",
        "test.tsv",
        GOOD_TSV,
        {"shots": [0, 8]},
        ["train.tsv", "'train' split has 5 items, fewer than the 8 few-shot"],
    ),
    "TSV row with a missing column": (
        "tsv",
        "test.tsv",
        HEADER + "0\tP\tneutral\n",
        {},
        ["test.tsv", "line 2 has 3 tab-separated fields, the header 4"],
    ),
    "CSV row with a missing column": (
        "csv",
        "test.csv",
        ",sent,label\n0,文\n",
        {},
        ["test.csv", "line 2 has 2 comma-separated fields, the header 3"],
    ),
    "MGSM row without its answer": (
        "mgsm_tsv",
        "mgsm.tsv",
        "質問\t\n",
        {},
        ["mgsm.tsv", "line 1 is not"],
    ),
    "billion laughs": (
        "jsem_xml",
        "laughs.xml",
        LAUGHS,
        {},
        ["laughs.xml", "declares an XML entity"],
    ),
    "external entity (XXE)": (
        "niilc_xml",
        "xxe.xml",
        XXE,
        {},
        ["xxe.xml", "declares an XML entity"],
    ),
    "XML not well-formed": (
        "niilc_xml",
        "bad.xml",
        "<questions><question>",
        {},
        ["bad.xml", "not well-formed"],
    ),
    "KNP morpheme before its phrase": (
        "wiki_reading",
        "",
        f"# S-ID:wiki00000001-00\n{MORPHEME}\nEOS\n",
        {},
        ["wiki00000001.knp", "line 2 is no morpheme line"],
    ),
    "KNP phrase without a dependency": (
        "wiki_reading",
        "",
        "# S-ID:wiki00000001-00\n* x\nEOS\n",
        {},
        ["wiki00000001.knp", "line 2: no dependency"],
    ),
    "KNP line before any sentence": (
        "wiki_reading",
        "",
        f"{MORPHEME}\nEOS\n",
        {},
        ["wiki00000001.knp", "line 1 comes before"],
    ),
    "empty TSV": ("tsv", "test.tsv", "", {}, ["test.tsv", "holds no rows"]),
    "empty CSV": ("csv", "test.csv", "", {}, ["test.csv", "holds no rows"]),
    "empty JSON": ("json", "test.json", "", {}, ["test.json", "not valid UTF-8 JSON"]),
    "JSON empty array": ("json", "test.json", "[]", {}, ["test.json", "holds no rows"]),
    "empty XML": ("jsem_xml", "test.xml", "", {}, ["test.xml", "not well-formed"]),
    "empty id list": ("wiki_reading", "", "", {}, ["test.id", "holds no rows"]),
    "TSV not UTF-8": ("tsv", "test.tsv", NOT_UTF8, {}, ["test.tsv", "not UTF-8"]),
    "CSV not UTF-8": ("csv", "test.csv", NOT_UTF8, {}, ["test.csv", "not UTF-8"]),
    "MGSM TSV not UTF-8": ("mgsm_tsv", "m.tsv", NOT_UTF8, {}, ["m.tsv", "not UTF-8"]),
    "JSON not UTF-8": ("json", "test.json", NOT_UTF8, {}, ["test.json", "UTF-8"]),
    "XML not UTF-8": ("jsem_xml", "test.xml", NOT_UTF8, {}, ["test.xml", "not UTF-8"]),
    "KNP not UTF-8": ("wiki_reading", "", NOT_UTF8, {}, ["wiki00000001.knp", "KNP document"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_set_file_is_one_line_before_any_model(tmp_path: Path, case: str) -> None:
    reader, name, content, change, needles = CASES[case]
    if reader == "wiki_reading":  # the corpus: an id list naming one KNP document
        document = content.decode("shift_jis") if isinstance(content, bytes) else content
        name = knp_corpus(tmp_path, document if content else "# S-ID:x\nEOS\n")
        if isinstance(content, bytes):
            (tmp_path / "knp/wiki0000/wiki00000001.knp").write_bytes(content)
        if not content:
            (tmp_path / "id/test.id").write_text("")
    elif isinstance(content, bytes):
        (tmp_path / name).write_bytes(content)
    else:
        (tmp_path / name).write_text(content, encoding="utf-8")
    code, output = run(set_file(tmp_path, reader, name, **change))
    assert "nonexistent" not in output, output  # no model was touched
    assert_one_line(code, output, *needles)


@pytest.mark.parametrize("doc_id", ["ABSOLUTE", "../knp/wiki0000/wiki00000001", "a b"])
def test_an_id_list_cannot_name_a_file_outside_the_corpus(tmp_path: Path, doc_id: str) -> None:
    """A document id is a file name: an absolute path or `../` in an id list would make
    the reader open (and send to the model) a file outside the corpus."""
    name = knp_corpus(tmp_path, "# S-ID:wiki00000001-00\nEOS\n")
    elsewhere = tmp_path / "elsewhere" / "secret"
    elsewhere.parent.mkdir()
    elsewhere.with_suffix(".knp").write_text("# S-ID:secret-00\nEOS\n", encoding="utf-8")
    line = str(elsewhere) if doc_id == "ABSOLUTE" else doc_id
    (tmp_path / name).write_text(f"wiki00000001\n{line}\n", encoding="utf-8")
    code, output = run(set_file(tmp_path, "wiki_reading", name))
    assert "nonexistent" not in output, output
    assert_one_line(code, output, "test.id", "line 2", "is not a document id")


def test_a_built_in_set_without_its_data_folder_says_where_to_point(tmp_path: Path) -> None:
    """`--tasks jaster:jsem` with --data-dir pointing where no jaster/ is: the line names
    the missing file and says that --data-dir is the folder that holds jaster/."""
    code, output = within_deadline(
        lambda: invoke(
            "--tasks", "jaster:jsem", "--model", "hf:/nonexistent", "--data-dir", str(tmp_path)
        )
    )
    assert "nonexistent" not in output, output
    assert_one_line(code, output, "jaster/jsem/", "data file not found", "holds jaster/")


def _no_file(path: Path, kind: str) -> None:
    """`path` made a FIFO (whose open waits for a writer for ever) or a link to
    /dev/zero (a read that never ends)."""
    path.unlink(missing_ok=True)
    if kind == "FIFO":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.parametrize("kind", ["FIFO", "link to /dev/zero"])
@pytest.mark.parametrize("where", ["set file", "id list", "KNP document"])
def test_a_set_file_that_is_no_file_is_one_line_not_a_hang(
    tmp_path: Path, where: str, kind: str
) -> None:
    """Before `open_input` (hakari/_util/infiles.py) a FIFO in place of a set's file
    held the run at its first read until killed."""
    if where == "set file":
        name, reader, target = "test.tsv", "tsv", tmp_path / "test.tsv"
    else:
        name, reader = knp_corpus(tmp_path, "# S-ID:wiki00000001-00\nEOS\n"), "wiki_reading"
        target = tmp_path / (name if where == "id list" else "knp/wiki0000/wiki00000001.knp")
    task = set_file(tmp_path, reader, name)
    _no_file(target, kind)
    code, output = run(task)
    assert "nonexistent" not in output, output
    assert_one_line(code, output, target.name, "not a regular file")


@pytest.mark.parametrize("where", ["set file", "KNP document"])
def test_a_set_file_past_its_size_bound_is_refused_before_it_is_read(
    tmp_path: Path, where: str
) -> None:
    """A sparse file of zeros costs no disk: read, it would fill the memory."""
    if where == "set file":
        name, reader, target, bound = "test.tsv", "tsv", tmp_path / "test.tsv", "256 MiB"
        size = SET_FILE_LIMIT + 1
    else:
        name, reader = knp_corpus(tmp_path, "# S-ID:wiki00000001-00\nEOS\n"), "wiki_reading"
        target, bound = tmp_path / "knp/wiki0000/wiki00000001.knp", "64 MiB"
        size = KNP_FILE_LIMIT + 1
    task = set_file(tmp_path, reader, name)
    with target.open("wb") as fh:
        fh.truncate(size)
    code, output = run(task)
    assert "nonexistent" not in output, output
    assert_one_line(code, output, target.name, f"{size:,} bytes, larger than the {bound}")

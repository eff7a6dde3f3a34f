"""jaster sets: llm-jp-eval v1.3.0's splits and prompt, character for character, and bad
set files as one line with exit code 2 before any model loads.

The prompts are built here as llm-jp-eval v1.3.0 builds them (`datasets/<set>.py` makes
the samples, `utils.get_few_shot_samples` takes the train split's first N,
`utils.get_evaluation_prompt` writes the prompt, langchain fills `{input}`), written out
in this file from those sources, not from hakari's code. The split digests were checked
against the JSON files llm-jp-eval's own processors wrote from the same files.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import hakari
from hakari.backends.base import GenerationRequest, apply_output_rules
from hakari.backends.fake import FakeBackend
from hakari.cli import app
from hakari.errors import HakariInputError
from hakari.interop.api import export_run
from hakari.tasks.data import iter_rows
from hakari.tasks.extract import blank_line_answer
from hakari.tasks.families import load_tasks
from hakari.tasks.loader import Task, load_task
from hakari.tasks.prompts import render
from hakari.tasks.readers import READERS
from tests.helpers.paths import SHARED
from tests.helpers.tasks import jaster_task

JASTER = SHARED / "datasets" / "jaster"
DATASETS = SHARED / "datasets"
SETS = (
    "jamp",
    "janli",
    "jsick",
    "jsem",
    "jemhopqa",
    "niilc",
    "mawps",
    "mgsm",
    "commonsensemoralja",
    "wiki_reading",
    "wiki_dependency",
    "wiki_ner",
    "wiki_pas",
    "wiki_coreference",
)
HEADER = (
    "以下は、タスクを説明する指示と、文脈のある入力の組み合わせです。"
    "要求を適切に満たす応答を書きなさい。"
)
needs_data = pytest.mark.skipif(not JASTER.is_dir(), reason=f"jaster data not found at {JASTER}")


def all_items(task: Task) -> Task:
    source = task.spec.data.jaster
    assert source is not None
    data = task.spec.data.model_copy(
        update={"jaster": source.model_copy(update={"max_items": None})}
    )
    return Task(spec=task.spec.model_copy(update={"data": data}), path=task.path)


# --- splits ---------------------------------------------------------------------------

SPLITS = {  # split -> (items, sha256 prefix of its (input, output) pairs)
    "jamp": {
        "train": (8955, "9c82508724654196"),
        "dev": (995, "389c789587ee7fb4"),
        "test": (348, "b4e743225c930664"),
    },
    "janli": {
        "train": (12312, "7b3cbeffd1a47938"),
        "dev": (1368, "4a0e77ba2e7e182d"),
        "test": (720, "8d354fe42e9ad6f8"),
    },
    "jsick": {
        "train": (4500, "2372824a1e316f5d"),
        "dev": (500, "8ec452572c05acaa"),
        "test": (4927, "da66196abd10fc1e"),
    },
    "jsem": {
        "train": (12667, "09b5965180ae16a4"),
        "dev": (1583, "8e99ad4aac4b4e59"),
        "test": (1584, "e079662ec7fe6609"),
    },
    "jemhopqa": {
        "train": (953, "6f42beda15365248"),
        "dev": (106, "acacd2c45ca8d1bb"),
        "test": (120, "767faa6794d36e86"),
    },
    "niilc": {
        "train": (715, "4011dcf3df4101c3"),
        "dev": (80, "b7452932b298355a"),
        "test": (198, "b77f5ffe95e45a06"),
    },
    "mawps": {
        "train": (16, "dec7889d369ad6b6"),
        "dev": (500, "1d045fe3f48e5a45"),
        "test": (500, "d9c5d625914c88a3"),
    },
    # newer llm-jp-eval's sets (unpinned): the files as shipped, in file order; MGSM has
    # no train split here (its exemplars are not shipped)
    "mgsm": {"test": (250, "fc4915805be5b903")},
    "commonsensemoralja": {
        "train": (13975, "2a1b5a9cd61de258"),
        "dev": (1996, "c769b180a1ab9f61"),
        "test": (3992, "0171c861213c330a"),
    },
    # the first 8 of 1,517 train documents are shipped: enough for 4 few-shot examples
    "wiki_reading": {
        "train": (8, "179cdc2f90e6afce"),
        "dev": (100, "ca88c7295cad1f4f"),
        "test": (200, "a46be4bcfdfb9cfd"),
    },
    "wiki_dependency": {
        "train": (8, "d25c5b30fdceee00"),
        "dev": (100, "ca446f5f9259a937"),
        "test": (200, "c33b38001534a390"),
    },
    # documents without a named entity are left out, as llm-jp-eval leaves them out
    "wiki_ner": {
        "train": (4, "0e4365f46ead9139"),
        "dev": (64, "4fadb084dd0aad92"),
        "test": (113, "61ac68b83f5da281"),
    },
    # the same digests come from llm-jp-eval v1.3.0's wiki/pas.py and wiki/coreference.py
    # run with rhoknp 1.8.2 on the shipped documents (every document's row equal)
    "wiki_pas": {
        "train": (8, "181d3b4cd8ccad10"),
        "dev": (100, "a25a591cc0675151"),
        "test": (199, "dba5b667bfbcb742"),
    },
    "wiki_coreference": {
        "train": (8, "16c63ef94bcacdd7"),
        "dev": (100, "f888ffd6a4cfc48a"),
        "test": (200, "ef2f66d59a855a09"),
    },
}


@pytest.mark.slow
@needs_data
@pytest.mark.parametrize("name", SETS)
def test_splits_are_llm_jp_evals(name: str) -> None:
    task = all_items(load_task(name))
    for split, (items, digest) in SPLITS[name].items():
        rows = list(iter_rows(task.spec, split=split, data_dir=DATASETS))
        text = "\x00".join(r["input"] + "\x01" + r["output"] for r in rows)
        assert (len(rows), hashlib.sha256(text.encode()).hexdigest()[:16]) == (items, digest)
    # by default the eval split is its first 100 items, as llm-jp-eval's max_num_samples;
    # a --limit reads more (or fewer)
    spec = load_task(name).spec
    assert sum(1 for _ in iter_rows(spec, data_dir=DATASETS)) == 100
    items = SPLITS[name]["test"][0]
    assert sum(1 for _ in iter_rows(spec, data_dir=DATASETS, limit="all")) == items
    assert sum(1 for _ in iter_rows(spec, data_dir=DATASETS, limit=10**6)) == items
    assert sum(1 for _ in iter_rows(spec, data_dir=DATASETS, limit=3)) == 3


# --- the prompt, as llm-jp-eval v1.3.0 writes it ------------------------------------


def llm_jp_eval_samples(name: str) -> tuple[str, list[tuple[str, str]], list[tuple[str, str]]]:
    """(instruction, train samples, test samples) as the set's v1.3.0 processor makes them."""
    if name == "jamp":

        def read(path: Path) -> list[tuple[str, str]]:
            with path.open(encoding="utf-8") as f:
                next(f)
                return [(f"前提：{r[1]}\n仮説：{r[2]}", r[3]) for r in (ln.split("\t") for ln in f)]

        train = read(JASTER / "jamp/dataset/train_all.tsv")
        random.seed(42)
        random.shuffle(train)
        return (
            "前提と仮説の関係をentailment、contradiction、neutralの中から回答してください。"
            "それ以外には何も含めないことを厳守してください。\n\n制約：\n"
            "- 前提から仮説が、時間関係上導出可能である場合はentailmentと出力\n"
            "- 前提と仮説が両立しえない場合はcontradictionと出力\n"
            "- そのいずれでもない場合はneutralと出力",
            train[: int(len(train) * 0.9)],
            read(JASTER / "jamp/dataset/test_2.tsv"),
        )
    if name == "jemhopqa":

        def items(path: Path) -> list[tuple[str, str]]:
            return [(f"質問：{x['question']}", x["answer"]) for x in json.loads(path.read_text())]

        train = items(JASTER / "jemhopqa/corpus/train.json")
        random.seed(42)
        random.shuffle(train)
        return (
            "質問を入力とし、回答を出力してください。回答の他には何も含めないことを厳守してくだ"
            "さい。回答が'はい'と'いいえ'で答えることができる場合、'YES'と'NO'で答えてください。",
            train[: int(len(train) * 0.9)],
            items(JASTER / "jemhopqa/corpus/dev.json"),
        )
    if name == "commonsensemoralja":
        # newer llm-jp-eval's (not in v1.3.0; unpinned): the instruction as the set's README
        # records it, `文章：` + the sentence (hakari's reading), the files as the splits
        def rows(split: str) -> list[tuple[str, str]]:
            path = JASTER / f"commonsensemoralja/data/data_{split}.csv"
            with path.open(encoding="utf-8", newline="") as f:
                return [(f"文章：{r[1]}", r[2]) for r in list(csv.reader(f))[1:]]

        return (
            "これから提示する日本語の文章が道徳的な誤りを含んでいるかを判断してください。"
            "道徳的に正しい文章の場合0、誤りを含んでいる場合は1を出力してください。"
            "必ず1か0のどちらか1文字を出力し、それ以外には何も含めないことを厳守してください。",
            rows("train"),
            rows("test"),
        )
    if name == "mgsm":  # 0-shot only: the train exemplars are not shipped
        lines = (JASTER / "mgsm/mgsm_ja.tsv").read_text(encoding="utf-8").splitlines()
        return (
            "質問を入力とし、数字のみの回答を出力してください。回答の他には何も含めないことを"
            "厳守してください。",
            [],
            [(f"質問：{q}", a.replace(",", "")) for q, a in (ln.split("\t") for ln in lines)],
        )
    assert name == "mawps"
    folder = JASTER / "mawps/dataset/mawps"
    train = []
    for file in ("zero_shot_example.json", "shot_example.json"):
        for example in json.loads((folder / file).read_text()):
            question, answer = example["shot_example"].split("\n解答：")
            train.append((question, answer.split("答えは")[1].split("です。")[0]))
    test = [
        (x["question"].split("\n解答：")[0], x["answer"])
        for x in json.loads((folder / "test.json").read_text())
    ]
    random.seed(42)
    random.shuffle(test)
    return (
        "与えられた計算問題に対する答えを整数または小数で出力してください。数値のみを出力し、"
        "それ以外には何も含めないことを厳守してください。",
        train,
        test[int(len(test) / 2) :],
    )


def llm_jp_eval_prompt(instruction: str, shots: list[tuple[str, str]], text: str) -> str:
    system_message = f"{HEADER}\n\n### 指示:\n{instruction}"
    for shot_input, shot_output in shots:
        system_message += f"\n\n### 入力:\n{shot_input}\n\n### 応答:\n{shot_output}"
    system_message += "\n\n### 入力:\n{input}\n\n### 応答:\n"
    return system_message.format(input=text)  # langchain's f-string PromptTemplate


@needs_data
@pytest.mark.parametrize("name", ["jamp", "jemhopqa", "mawps", "commonsensemoralja", "mgsm"])
@pytest.mark.parametrize("shots", [0, 2, 4])
def test_template_0_is_llm_jp_evals_prompt(name: str, shots: int) -> None:
    instruction, train, test = llm_jp_eval_samples(name)
    task = load_task(name)
    if name == "mgsm" and shots:
        assert f"0-{shots}" not in [t.id for t in task.spec.templates]  # no few-shot source
        return
    rows = list(iter_rows(task.spec, data_dir=DATASETS, limit=8))
    for index in (0, 7):
        want = llm_jp_eval_prompt(instruction, train[:shots], test[index][0])
        got = render(task.spec, task.spec.template(f"0-{shots}"), rows[index], index)
        assert got.text == want
        assert got.gold == [test[index][1]]
    lengths = {"jamp": 3, "jemhopqa": 15, "mawps": 10, "commonsensemoralja": 3, "mgsm": 10}
    assert task.spec.max_new_tokens == lengths[name]


@needs_data
def test_wiki_reading_rows_are_read_as_llm_jp_eval_reads_them() -> None:
    """A document's text and hiragana reading (checked once against llm-jp-eval's
    `wiki/reading.py`, `wiki/dependency.py` and `wiki/ner.py` on rhoknp 1.8.2: all 308
    shipped documents the same)."""
    task = load_task("wiki_reading")
    row = next(iter_rows(task.spec, split="train", data_dir=DATASETS))
    assert row["input"].startswith("インダクタンスは、コイルなどにおいて電流の変化が")
    assert row["output"].startswith("いんだくたんすは、こいるなどにおいてでんりゅうのへんかが")
    assert task.spec.max_new_tokens == 512 and task.spec.metrics == ["char_f1"]


def test_answer_is_the_text_before_the_first_blank_line() -> None:
    assert blank_line_answer(" entailment\n\n### 入力:\n…") == "entailment"
    assert blank_line_answer("１２６\nです") == "126\nです"  # one newline is kept
    assert blank_line_answer("\n\nentailment") == ""
    assert blank_line_answer("") == ""


def test_a_greedy_answer_runs_to_its_first_blank_line(tmp_path: Path) -> None:
    """llm-jp-eval lets the model write on past a line end and takes all the text before
    the first blank line: greedy generation stops there, not at the first line end (which
    gave `entailment` a point llm-jp-eval does not give it, and cut wiki_dependency's
    answers, one relation a line, to their first line)."""
    said = "entailment\nなぜなら前提が\n\n### 入力:\n前提：…"

    def model(request: GenerationRequest) -> str:  # a model under hakari's output rules
        return apply_output_rules(said, stop=request.stop)[0]

    backend = FakeBackend(model)
    hakari.evaluate(
        models=["stand-in"],
        tasks=[str(bad_set(tmp_path))],
        decodings=["greedy"],
        templates="0-4",
        n_boot=0,
        use_cache=False,
        output_dir=tmp_path / "run",
        backend_factory=lambda spec: backend,
    )
    assert {r.stop for r in backend.generated} == {("\n\n",)}
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").open()]
    assert {s["answer"] for s in samples} == {"entailment\nなぜなら前提が"}
    assert {s["matched"] for s in samples} == {"entailment\nなぜなら前提が"}
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    budgets = results["config"]["generation_budgets"]["tiny_jaster"]
    assert budgets["greedy_stop"] == ["\n\n"]
    (model_results,) = results["models"].values()
    scores = model_results["tasks"]["tiny_jaster"]["decodings"]["greedy"]["templates"]["0-4"]
    assert scores["metrics"]["llmjp_exact_match"] == 0.0  # the gold is `entailment`


@pytest.mark.parametrize(
    ("run_format", "as_chat"), [("auto", False), ("completion", False), ("chat", True)]
)
def test_a_set_goes_to_a_chat_model_as_plain_text_unless_the_run_says_chat(
    tmp_path: Path, run_format: str, as_chat: bool
) -> None:
    """llm-jp-eval sends its prompt as plain text (transformers' text-generation pipeline,
    no chat template): under `--prompt-format auto` a jaster set does so to a model with
    a chat template too, while the run's other tasks go in as chat; results.json says
    which tasks did. An explicit `--prompt-format` wins."""
    backend = FakeBackend(lambda r: "entailment", supports_chat=True)
    results = hakari.evaluate(
        models=["stand-in"],
        tasks=[str(bad_set(tmp_path)), "demo_sentiment_en"],
        decodings=["greedy"],
        prompt_format=run_format,
        limit=2,
        n_boot=0,
        use_cache=False,
        output_dir=tmp_path / "run",
        backend_factory=lambda spec: backend,
    )
    jaster = [r for r in backend.generated if "### 入力" in r.prompt]
    others = [r for r in backend.generated if "### 入力" not in r.prompt]
    assert jaster and others
    assert {r.messages is not None for r in jaster} == {as_chat}
    assert {r.messages is not None for r in others} == {run_format != "completion"}
    recorded = results.config.task_prompt_formats
    assert recorded == ({"tiny_jaster": "completion"} if run_format == "auto" else None)
    # an Every Eval Ever record says per task how its prompts went in
    export_run(tmp_path / "run", "eee", tmp_path / "eee")
    said = {}
    for record in (tmp_path / "eee").rglob("*.json"):
        aggregate = json.loads(record.read_text())
        said[aggregate["evaluation_id"]] = aggregate["model_info"]["additional_details"]
    by_task = {
        task: details["hakari.task_prompt_format"]
        for eid, details in said.items()
        for task in ("tiny_jaster", "demo_sentiment_en")
        if task in eid
    }
    assert by_task == {
        "tiny_jaster": "chat" if as_chat else "completion",
        "demo_sentiment_en": "completion" if run_format == "completion" else "chat",
    }


def test_family_runs_every_set_under_its_own_name() -> None:
    tasks = load_tasks(["jaster"])
    assert [(t.name, t.family) for t in tasks] == [(n, "jaster") for n in SETS]
    assert [t.name for t in load_tasks(["jaster:niilc"])] == ["niilc"]


# --- bad set files ----------------------------------------------------------------------


def bad_set(
    tmp_path: Path, *, gold: str = "entailment", train_rows: int = 5, **change: object
) -> Path:
    header = "num\tpremise\thypothesis\tgold_label\n"
    (tmp_path / "train.tsv").write_text(
        header + "".join(f"{i}\tA{i}\tB{i}\tneutral\n" for i in range(train_rows))
    )
    (tmp_path / "test.tsv").write_text(header + f"0\tP\tH\t{gold}\n1\tP2\tH2\tneutral\n")
    task = jaster_task(
        "tiny_jaster",
        {
            "input": "前提：{premise}\n仮説：{hypothesis}",
            "output": "gold_label",
            "instruction": "答えてください。",
            "shots": [0, 4],
            "pools": [
                {
                    "files": ["train.tsv"],
                    "reader": "tsv",
                    "shuffle": True,
                    "splits": {"train": 1.0},
                },
                {"files": ["test.tsv"], "reader": "tsv", "splits": {"test": 1.0}},
            ],
        },
    )
    task.update(change)
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task, allow_unicode=True))
    return path


def run_cli(path: Path) -> tuple[int, str]:
    # a model that cannot load: the error must come before any model is touched
    result = CliRunner().invoke(app, ["run", "--tasks", str(path), "--model", "hf:/nonexistent"])
    return result.exit_code, result.output


def test_a_good_set_file_renders_its_shots(tmp_path: Path) -> None:
    task = load_task(bad_set(tmp_path))
    row = next(iter_rows(task.spec, task_dir=tmp_path))
    text = render(task.spec, task.spec.templates[0], row, 0).text
    assert (
        text.startswith("答えてください。\n\n### 入力:\n前提：A") and text.count("### 応答:") == 4
    )
    assert text.endswith("\n前提：P\n仮説：H\n")


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"gold": ""}, ["test.tsv", "line 2 has no answer", "gold_label"]),
        ({"metrics": ["exact_matsh"]}, ["unknown metric 'exact_matsh'"]),
        (
            {"train_rows": 3},
            ["train.tsv", "'train' split has 3 items", "fewer than the 4 few-shot"],
        ),
    ],
)
def test_bad_set_files_are_one_line_and_exit_2(
    tmp_path: Path, change: dict[str, object], needles: list[str]
) -> None:
    code, output = run_cli(bad_set(tmp_path, **change))
    assert code == 2, output
    assert "Traceback" not in output and "nonexistent" not in output
    for needle in needles:
        assert needle in output, output


def run_rows(path: Path, tmp_path: Path, *options: str) -> tuple[int, str, dict]:
    """`hakari run` of a set file on the fake model: exit code, output, results.json."""
    out = tmp_path / "run"
    tmp_path.mkdir(parents=True, exist_ok=True)
    args = ["run", "--tasks", str(path), "--model", "fake:neutral", "--decoding", "greedy"]
    args += ["--n-boot", "0", "--cache-dir", str(tmp_path / "c"), "--output", str(out)]
    result = CliRunner().invoke(app, [*args, *options])
    done = (out / "results.json").is_file()
    return (
        result.exit_code,
        result.output,
        json.loads((out / "results.json").read_text()) if done else {},
    )


def test_limit_all_reads_every_item_past_max_items(tmp_path: Path) -> None:
    """A set's `max_items` (the leaderboards' first 100) is its default; `--limit all`
    reads every item of the split, `--limit N` the first N, anything else is one line."""
    data = bad_set(tmp_path).read_text()
    path = tmp_path / "capped.yaml"
    path.write_text(data.replace("  jaster:\n", "  jaster:\n    max_items: 1\n"))
    counts = {}
    for limit in (None, "all", "2"):
        code, output, results = run_rows(
            path, tmp_path / str(limit), *(["--limit", limit] if limit else [])
        )
        assert code == 0, output
        counts[limit] = results["models"]["fake:neutral"]["tasks"]["tiny_jaster"]["n_instances"]
        assert results["config"]["limit"] == {None: None, "all": "all", "2": 2}[limit]
    assert counts == {None: 1, "all": 2, "2": 2}
    for bad in ("al", "0", "-3"):
        code, output, _ = run_rows(path, tmp_path / "bad", "--limit", bad)
        assert code == 2 and "--limit" in output and "Traceback" not in output, output
        assert len(output.strip().splitlines()) == 1, output


def test_a_tsv_line_with_a_missing_field_is_refused(tmp_path: Path) -> None:
    path = bad_set(tmp_path)
    (tmp_path / "test.tsv").write_text("num\tpremise\thypothesis\tgold_label\n0\tP\tentailment\n")
    code, output = run_cli(path)
    assert code == 2 and "line 2 has 3 tab-separated fields, the header 4" in output, output


def knp_corpus(tmp_path: Path, split: str, *documents: str) -> tuple[Path, Path]:
    """The Wikipedia corpus's layout: `id/SPLIT.id` naming `documents` (returned) and the
    folder their KNP files go in (`knp/wiki0000`, made, empty)."""
    (tmp_path / "id").mkdir()
    ids = tmp_path / "id" / f"{split}.id"
    ids.write_text("".join(f"{d}\n" for d in documents))
    folder = tmp_path / "knp" / "wiki0000"
    folder.mkdir(parents=True)
    return ids, folder


def test_knp_reading_rules(tmp_path: Path) -> None:
    ids, folder = knp_corpus(tmp_path, "test", "wiki00000002", "wiki00000001")
    morpheme = "{} {} {} 名詞 6 普通名詞 1 * 0 * 0 NIL"
    (folder / "wiki00000001.knp").write_text(
        "\n".join(
            [
                "# S-ID:wiki00000001-00 KNP:5.0",
                "* 1D",
                "+ 1D",
                morpheme.format("日本", "にほん/にっぽん", "日本"),
                morpheme.format("CD", "CD", "CD"),
                "* -1D",
                "+ -1D",
                morpheme.format("明日", "　", "明日"),  # 熟字訓: no reading
                "EOS",
                "# S-ID:wiki00000001-01 括弧始:（ 括弧終:） 括弧位置:2",
                "* -1D",
                morpheme.format("略", "りゃく", "略"),
                "EOS",
            ]
        )
        + "\n"
    )
    (folder / "wiki00000002.knp").write_text("# S-ID:wiki00000002-00\nEOS\n")
    rows = [row for _, row in READERS["wiki_reading"](ids)]
    assert [r["id"] for r in rows] == ["wiki00000001", "wiki00000002"]  # sorted
    assert (rows[0]["text"], rows[0]["reading"]) == ("日本CD明日", "にほんしーでぃー")
    assert (rows[1]["text"], rows[1]["reading"]) == ("", "")
    rows = [row for _, row in READERS["wiki_dependency"](ids)]
    assert [r["dependencies"] for r in rows] == ["日本CD -> 明日", ""]
    (folder / "wiki00000002.knp").write_text("# S-ID:wiki00000002-00\n* 3D\nEOS\n")
    with pytest.raises(HakariInputError, match="parent is not in its sentence"):
        list(READERS["wiki_dependency"](ids))


def test_knp_named_entities_and_parentheses(tmp_path: Path) -> None:
    ids, folder = knp_corpus(tmp_path, "dev", "wiki00000003")
    morpheme = "{} x x 名詞 6 普通名詞 1 * 0 * 0 NIL"
    lines = [
        "# S-ID:wiki00000003-00 括弧削除 KNP:5.0",
        "* -1D",
        "+ 1D <NE:LOCATION:東京都>",
        morpheme.format("東京"),
        morpheme.format("都"),
        "+ -1D <NE:OPTIONAL:庁>",
        morpheme.format("庁"),
        "EOS",
        "# S-ID:wiki00000003-01 括弧始:（ 括弧終:） 括弧位置:2 KNP:5.0",
        "* -1D",
        "+ -1D <NE:PERSON:ない人>",  # no run of morphemes spells it: left out
        morpheme.format("とうきょう"),
        "EOS",
    ]
    (folder / "wiki00000003.knp").write_text("\n".join(lines) + "\n")
    [(_, row)] = list(READERS["wiki_ner"](ids))
    assert row["text"] == "東京（とうきょう）都庁"
    assert row["entities"] == "東京都（地名）"


RELATIONS_KNP = [
    "# S-ID:wiki00000009-00 KNP:5.0",
    "* 2D",
    "+ 2D",
    "太郎 たろう 太郎 名詞 6 人名 5 * 0 * 0 NIL",
    "は は は 助詞 9 副助詞 2 * 0 * 0 NIL",
    "* 2D",
    "+ 2D",
    "パン ぱん パン 名詞 6 普通名詞 1 * 0 * 0 NIL",
    "を を を 助詞 9 格助詞 1 * 0 * 0 NIL",
    "* -1D",
    "+ -1D "
    '<rel type="ガ" target="太郎" sid="" id="0"/>'
    '<rel type="ヲ" target="パン" sid="wiki00000009-00" id="1"/>'
    '<rel type="ニ" target="なし"/>'
    '<rel type="デ" target="不特定:人"/>'
    '<rel type="ガ２" target="太郎" sid="" id="0"/>',
    "食べ たべ 食べる 動詞 2 * 0 母音動詞 1 基本連用形 8 NIL",
    "た た た 接尾辞 14 動詞性接尾辞 7 * 0 * 0 NIL",
    "。 。 。 特殊 1 句点 1 * 0 * 0 NIL",
    "EOS",
    "# S-ID:wiki00000009-01 KNP:5.0",
    "* 1D",
    '+ 1D <rel type="=" target="太郎" sid="wiki00000009-00" id="0"/>',
    "彼 かれ 彼 名詞 6 普通名詞 1 * 0 * 0 NIL",
    "は は は 助詞 9 副助詞 2 * 0 * 0 NIL",
    "* -1D",
    "+ -1D "
    '<rel type="ガ" target="彼" sid="" id="0"/>'
    '<rel type="ヲ" target="パン" sid="wiki00000009-00" id="1"/>'
    '<rel type="ヲ" target="なし"/>',
    "寝 ね 寝る 動詞 2 * 0 母音動詞 1 基本連用形 8 NIL",
    "た た た 接尾辞 14 動詞性接尾辞 7 * 0 * 0 NIL",
    "EOS",
    "# S-ID:wiki00000009-02 括弧始:（ 括弧終:） 括弧位置:1 KNP:5.0",
    "* -1D",
    '+ -1D <rel type="=" target="太郎" sid="wiki00000009-00" id="0"/>',
    "たろう たろう たろう 名詞 6 人名 5 * 0 * 0 NIL",
    "EOS",
    "# S-ID:wiki00000009-03 KNP:5.0",
    "* -1D",
    "+ -1D "
    '<rel type="=≒" target="パン" sid="wiki00000009-00" id="1"/>'
    '<rel type="=" target="著者"/>',
    "それ それ それ 指示詞 7 名詞形態指示詞 1 * 0 * 0 NIL",
    "だ だ だ 判定詞 4 * 0 判定詞 25 基本形 2 NIL",
    "EOS",
    "# S-ID:wiki00000009-04 KNP:5.0",
    "* -1D",
    '+ -1D <rel type="=" target="著者"/>',
    "私 わたし 私 名詞 6 普通名詞 1 * 0 * 0 NIL",
    "EOS",
]


def test_knp_relations_as_rhoknp_reads_them(tmp_path: Path) -> None:
    """Predicate-argument and coreference rows of a hand-made document; the expected rows
    are what llm-jp-eval v1.3.0's wiki/pas.py and wiki/coreference.py make of it with
    rhoknp 1.8.2 (run once, outside the tests): a `sid=""` argument in its own sentence,
    ガ２ written ガ after ヲ, `target="なし"` making the earlier ヲ optional (and ignored
    with none before it), exophora arguments left out, a `括弧始` sentence kept in the
    PAS text but left out of coreference, a `=≒` relation not merging, two mentions of
    the writer (著者) one chain."""
    (tmp_path / "id").mkdir()
    (tmp_path / "id" / "dev.id").write_text("wiki00000009\n")
    folder = tmp_path / "knp" / "wiki0000"
    folder.mkdir(parents=True)
    (folder / "wiki00000009.knp").write_text("\n".join(RELATIONS_KNP) + "\n")
    [(_, pas)] = list(READERS["wiki_pas"](tmp_path / "id" / "dev.id"))
    assert pas["text"] == "太郎はパンを食べた。彼は寝たたろうそれだ私"
    assert pas["pas"] == "食べた ガ：太郎 ヲ：パン ガ：太郎\n寝た ガ：彼"
    [(_, coreference)] = list(READERS["wiki_coreference"](tmp_path / "id" / "dev.id"))
    assert coreference["text"] == "太郎はパンを食べた。彼は寝たそれだ私"
    assert coreference["coreference"] == "太郎 彼\nそれ 私"

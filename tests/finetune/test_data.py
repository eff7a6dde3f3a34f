"""Fine-tuning data, checked exactly and without a model: nested seeded sampling,
upsampling, the hash split, sweep and mixture planning, the settings of the papers, the
adapter spec, and every bad input as one line with exit code 2 before a model loads."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from typer.testing import CliRunner

from hakari.backends.adapters import check_adapter, split_adapter_spec
from hakari.cli import app
from hakari.errors import HakariInputError, ModelLoadError
from hakari.finetune.config import (
    TrainSettings,
    mixture_settings,
    resolve_runtime,
    with_overrides,
)
from hakari.finetune.data import (
    Example,
    hash_split,
    nested_sample,
    parse_sizes,
    read_mixture,
    row_key,
    upsample,
)
from hakari.finetune.mixture import MixtureSpec, plan_mixture
from hakari.finetune.sweep import load_task_data, plan_sweep
from hakari.tasks.loader import load_task
from hakari.tasks.space import expand_task
from tests.helpers.finetune import (
    write_base_mixture,
    write_jsonl,
    write_space_task,
    write_toy_task,
)


def test_nested_sample_is_a_prefix_of_one_seeded_permutation() -> None:
    assert nested_sample(10, 10, 42) == [7, 3, 2, 8, 5, 6, 9, 4, 0, 1]  # pinned: seed 42
    sizes = [1, 10, 100, 500]
    samples = {n: nested_sample(1000, n, 42) for n in sizes}
    for small, large in itertools.pairwise(sizes):
        assert samples[large][:small] == samples[small]  # the 100 contain the 10
    assert len(set(samples[500])) == 500 and all(0 <= i < 1000 for i in samples[500])
    assert nested_sample(1000, 10, 42) == samples[10]  # deterministic
    assert nested_sample(1000, 10, 43) != samples[10]
    assert sorted(nested_sample(7, 7, 0)) == list(range(7))
    with pytest.raises(ValueError):
        nested_sample(5, 6, 0)


def test_upsample_repeats_cyclically_to_the_total() -> None:
    assert upsample([3, 1], 5) == [3, 1, 3, 1, 3]
    ten = nested_sample(100, 10, 42)
    up = upsample(ten, 1000)
    assert len(up) == 1000 and Counter(up) == {i: 100 for i in ten}  # 10 sentences 100 times
    assert upsample([4, 2, 9], 3) == [4, 2, 9]  # already that large: unchanged
    assert upsample([4, 2, 9], 2) == [4, 2, 9]


def test_hash_split_is_md5_mod_1e9_against_the_shares() -> None:
    # md5("a") = 0cc175b9c0f1b6a831c399e269772661; mod 10^9 = 858726497
    assert int("0cc175b9c0f1b6a831c399e269772661", 16) % 10**9 == 858726497
    assert hash_split("a", 0.1, 0.1) == "train"
    assert hash_split("a", 0.86, 0.0) == "validation"  # 858726497 < 860000000
    assert hash_split("a", 0.858726498, 0.0) == "validation"
    assert hash_split("a", 0.5, 0.4) == "test"  # 500M <= 858.7M < 900M
    assert hash_split("a", 0.5, 0.35) == "train"
    counts = Counter(hash_split(f"example {i}", 0.1, 0.2) for i in range(20000))
    assert abs(counts["validation"] / 20000 - 0.1) < 0.01
    assert abs(counts["test"] / 20000 - 0.2) < 0.01
    with pytest.raises(ValueError):
        hash_split("a", 0.6, 0.4)


def test_hash_split_boundary_is_exact() -> None:
    # bucket 858726497: share s puts it in validation iff 858726497 < s * 10^9
    assert hash_split("a", 0.858726497, 0.0) == "train"
    assert hash_split("a", 0.858726497, 0.1) == "test"


def test_parse_sizes() -> None:
    assert parse_sizes("1,10,all", 50) == [1, 10, 50]
    assert parse_sizes("10,10", 50) == [10]
    for bad, msg in [("60", "more than the 50"), ("0", "at least 1"), ("x", "not a number")]:
        with pytest.raises(HakariInputError, match=msg):
            parse_sizes(bad, 50)


def test_sweep_plan_sampled_and_upsampled_nested(tmp_path: Path) -> None:
    task_path = write_toy_task(tmp_path, n_train=10)
    tasks = load_task_data([str(task_path)], None)
    jobs = plan_sweep(
        model="smollm2-135m", tasks=tasks, templates="all", sizes_text="1,2,4,all",
        upsample_to=8, seed=42, settings=TrainSettings(), output=tmp_path / "out",
        prompt_format="auto", device="cpu", cache_dir=None,
    )  # fmt: skip
    names = [j.name for j in jobs]
    assert names == [
        "size-1", "size-1-up8", "size-2", "size-2-up8", "size-4", "size-4-up8", "size-10",
    ]  # fmt: skip
    by_name = {j.name: j.job for j in jobs}
    order = nested_sample(10, 10, 42)
    for size in (1, 2, 4, 10):
        job = by_name[f"size-{size}"]
        assert job.data["instances"]["toy_polarity"] == order[:size]
        assert len(job.examples) == 2 * size  # every instance x both templates
        assert job.output == tmp_path / "out" / f"size-{size}"
    up = by_name["size-2-up8"]
    assert len(up.examples) == 8 * 2
    sources = Counter(ex.source for ex in up.examples)
    assert set(sources.values()) == {4}  # 2 instances, 4 times each, both templates
    rows = tasks[0].rows
    spec = tasks[0].task.spec
    for ex in up.examples:
        index = int(ex.source.split("#")[1].split("@")[0])
        template = next(t for t in spec.templates if ex.source.endswith("@" + t.id))
        assert re.fullmatch(template.regex, ex.target)
        assert rows[index]["text"] in ex.prompt


def test_single_job_writes_into_the_output_folder(tmp_path: Path) -> None:
    tasks = load_task_data([str(write_toy_task(tmp_path))], None)
    (job,) = plan_sweep(
        model="smollm2-135m", tasks=tasks, templates=["0-0"], sizes_text="3",
        upsample_to=None, seed=1, settings=TrainSettings(), output=tmp_path / "a",
        prompt_format="auto", device="cpu", cache_dir=None,
    )  # fmt: skip
    assert job.name == "" and job.job.output == tmp_path / "a"
    assert [e.source.rsplit("@", 1)[1] for e in job.job.examples] == ["0-0"] * 3


def test_sweep_trains_on_the_space_sample_hakari_run_evaluates(tmp_path: Path) -> None:
    """`--templates space:3` on a task with a prompt space: the examples come from the
    three generated templates `hakari run --templates space:3` would evaluate, each
    target the gold's symbol under its template's enumerator."""
    path = write_space_task(tmp_path, n_train=8)
    tasks = load_task_data([str(path)], None, ["space:3"])
    (job,) = plan_sweep(
        model="smollm2-135m", tasks=tasks, templates=["space:3"], sizes_text="4",
        upsample_to=None, seed=1, settings=TrainSettings(), output=tmp_path / "a",
        prompt_format="auto", device="cpu", cache_dir=None,
    )  # fmt: skip
    expected = expand_task(load_task(path), ["space:3"]).spec.templates
    by_id = {t.id: t for t in expected}
    assert len(by_id) == 3
    used = Counter(e.source.rsplit("@", 1)[1] for e in job.job.examples)
    assert used == {tid: 4 for tid in by_id}  # 4 instances × the 3 sampled templates
    rows = tasks[0].rows
    for ex in job.job.examples:
        index = int(ex.source.split("#")[1].split("@")[0])
        template = by_id[ex.source.rsplit("@", 1)[1]]
        assert template.answers is not None and template.levels is not None
        assert template.answers[ex.target] == "ABCD".index(rows[index]["gold"])
        assert rows[index]["question"] in ex.prompt


def test_mixture_plan_nested_resamples_and_no_test_leak(tmp_path: Path) -> None:
    task_path = write_toy_task(tmp_path, n_train=60)
    base = write_base_mixture(tmp_path / "base.jsonl", 50)
    spec = MixtureSpec(
        model="smollm2-135m", mixture=base, target=str(task_path), n_target=[0, 5, 10],
        resamples=2, seed=7, templates="all", validation_ratio=0.2, test_ratio=0.2,
        output=tmp_path / "mix",
    )  # fmt: skip
    jobs = plan_mixture(spec)
    assert [(j.n_target, j.resample) for j in jobs] == [(0, 0), (5, 0), (10, 0), (5, 1), (10, 1)]
    task = load_task(str(task_path))
    rows = [json.loads(x) for x in (tmp_path / "train.jsonl").read_text().splitlines()]
    test_texts = {r["text"] for r in rows if hash_split(row_key(task.name, r), 0.2, 0.2) == "test"}
    base_examples = read_mixture(base)
    base_train = [e for e in base_examples if hash_split(_key(e), 0.2, 0.2) == "train"]
    by = {(j.n_target, j.resample): j.job for j in jobs}
    for job in by.values():
        assert job.examples[: len(base_train)] == base_train  # the base mixture's train part
        target = job.examples[len(base_train) :]
        assert not any(t in ex.prompt for ex in target for t in test_texts)
        assert all(_key(e) not in {_key(v) for v in job.validation} for e in job.examples)
        assert job.settings.lora.r == 8 and job.settings.learning_rate == 5e-4
    for r in (0, 1):
        five = by[(5, r)].examples[len(base_train) :]
        ten = by[(10, r)].examples[len(base_train) :]
        assert len(five) == 5 and len(ten) == 10 and ten[:5] == five  # nested
    assert by[(5, 0)].examples != by[(5, 1)].examples  # resampled
    assert len(by[(0, 0)].examples) == len(base_train)


def _key(example: Example) -> str:
    from hakari.finetune.data import example_key

    return example_key(example)


def test_read_mixture_formats_and_errors(tmp_path: Path) -> None:
    alpaca = write_jsonl(
        tmp_path / "alpaca.jsonl",
        [
            {"instruction": "Translate", "input": "猫", "output": "cat"},
            {"instruction": "Say hi", "input": "", "output": "hi"},
        ],
    )
    got = read_mixture(alpaca)
    assert [(e.prompt, e.target) for e in got] == [("Translate\n\n猫", "cat"), ("Say hi", "hi")]
    cases = {
        "bad.jsonl": (b'{"prompt": "a", "response": "b"}\n{oops\n', "line 2: not valid JSON"),
        "field.jsonl": (b'{"prompt": "a"}\n', "line 1: 'response' must be a non-empty string"),
        "type.jsonl": (b'{"prompt": "a", "response": 3}\n', "'response' must be"),
        "other.jsonl": (b'{"text": "a"}\n', "needs 'prompt' and 'response'"),
        "list.jsonl": (b"[1, 2]\n", "expected a JSON object"),
        "latin1.jsonl": (b'{"prompt": "a", "response": "b"}\n{"prompt": "\xe9"}\n',
                         "line 2: not UTF-8"),
        "empty.jsonl": (b"\n\n", "no rows"),
    }  # fmt: skip
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(HakariInputError, match=re.escape(message)) as info:
            read_mixture(path)
        assert name in str(info.value)


def test_settings_are_the_papers() -> None:
    s = TrainSettings()
    # seed 000, Table 7
    assert (s.lora.r, s.lora.alpha, s.lora.dropout) == (64, 16, 0.1)
    assert (s.learning_rate, s.lr_scheduler, s.epochs, s.batch_size, s.seed) == (
        5e-5, "linear", 1.0, 8, 42,
    )  # fmt: skip
    assert (s.optimizer, s.dtype) == ("paged_adamw_8bit", "float16")
    q = s.quant
    assert (q.load_in_4bit, q.bnb_4bit_use_double_quant, q.bnb_4bit_quant_type) == (
        True, True, "nf4",
    )  # fmt: skip
    # seed 003, A.5: 400 steps of 128 or one epoch, whichever is fewer
    m = mixture_settings(100_000)
    assert (m.lora.r, m.lora.alpha, m.lora.dropout) == (8, 16, 0.05)
    assert m.batch_size * m.gradient_accumulation == 128
    assert (m.max_steps, m.warmup_steps, m.learning_rate) == (400, 100, 5e-4)
    assert mixture_settings(1000).max_steps == 8  # one epoch: ceil(1000 / 128)
    assert m.early_stopping_patience == 1 and m.eval_steps == 100
    changed = with_overrides(s, {"max_steps": 3, "lora": {"r": 4}})
    assert (changed.max_steps, changed.lora.r, changed.lora.alpha) == (3, 4, 16)


def test_qlora_on_cpu_trains_plain_lora_and_says_so() -> None:
    runtime = resolve_runtime(with_overrides(TrainSettings(), {"qlora": True}), "cpu")
    assert runtime.qlora is False and runtime.device == "cpu"
    assert runtime.optimizer == "adamw_torch" and runtime.dtype == "float32"
    assert any("QLoRA" in note and "needs CUDA" in note for note in runtime.notes)


def test_adapter_spec_parsing_and_checks(tmp_path: Path) -> None:
    assert split_adapter_spec("smollm2-135m") == ("smollm2-135m", None)
    assert split_adapter_spec(f"hf:{tmp_path}+adapter:{tmp_path}/a") == (
        f"hf:{tmp_path}",
        tmp_path / "a",
    )
    with pytest.raises(ModelLoadError, match="expected <model spec>"):
        split_adapter_spec("smollm2-135m+adapter:")
    with pytest.raises(ModelLoadError, match="does not exist"):
        check_adapter(tmp_path / "missing")
    with pytest.raises(ModelLoadError, match=r"no adapter_config\.json"):
        check_adapter(tmp_path)
    (tmp_path / "adapter_config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="not valid JSON"):
        check_adapter(tmp_path)
    (tmp_path / "adapter_config.json").write_text('{"r": 8}')
    with pytest.raises(ModelLoadError, match="no 'peft_type'"):
        check_adapter(tmp_path)
    (tmp_path / "adapter_config.json").write_text('{"peft_type": "LORA"}')
    with pytest.raises(ModelLoadError, match="no weights"):
        check_adapter(tmp_path)
    (tmp_path / "adapter_model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ModelLoadError, match="not a readable safetensors file"):
        check_adapter(tmp_path)
    save_file({"w": np.zeros(2, dtype=np.float32)}, str(tmp_path / "adapter_model.safetensors"))
    first = check_adapter(tmp_path)
    save_file({"w": np.ones(2, dtype=np.float32)}, str(tmp_path / "adapter_model.safetensors"))
    assert check_adapter(tmp_path).sha256 != first.sha256  # content, not path or time


def _cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    return write_toy_task(tmp_path, n_train=6)


# A real model: had any case below got past its input checks, it would start training.
NO_MODEL = "smollm2-135m"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tasks", "no_such_task"], "unknown task 'no_such_task'"),
        (["--tasks", "{toy}", "--templates", "9-9"], "unknown template id(s) 9-9"),
        (["--tasks", "{toy}", "--train-size", "7"], "7 is more than the 6 training instances"),
        (["--tasks", "{toy}", "--prompt-format", "xml"], "must be auto, chat or completion"),
        (["--tasks", "{toy}", "--upsample-to", "0"], "--upsample-to"),
        (["--mixture", "{tmp}/base.jsonl"], "--mixture needs --target"),
        (["--mixture", "{tmp}/nope.jsonl", "--target", "{toy}"], "mixture file not found"),
        (["--mixture", "{tmp}/bad.jsonl", "--target", "{toy}"], "line 2: not valid JSON"),
        (["--mixture", "{tmp}/latin1.jsonl", "--target", "{toy}"], "line 1: not UTF-8"),
        (["--mixture", "{tmp}/base.jsonl", "--target", "{toy}", "--n-target", "99"], "99 is more"),
        (["--tasks", "{toy}", "--model", "smollm2-135m+adapter:{tmp}"], "no adapter_config.json"),
        ([], "give --tasks"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(
    tmp_path: Path, toy: Path, extra: list[str], message: str
) -> None:
    write_base_mixture(tmp_path / "base.jsonl", 10)
    (tmp_path / "bad.jsonl").write_text('{"prompt": "a", "response": "b"}\n{\n')
    (tmp_path / "latin1.jsonl").write_bytes(b'{"prompt": "caf\xe9", "response": "b"}\n')
    args = [a.format(toy=toy, tmp=tmp_path) for a in extra]
    if "--model" not in args:
        args += ["--model", NO_MODEL]
    code, output = _cli(["finetune", *args, "--output", str(tmp_path / "out")])
    assert code == 2, output
    assert message in " ".join(output.split()), output
    assert output.strip().startswith("error:") and len(output.strip().splitlines()) == 1
    assert "Traceback" not in output
    assert not (tmp_path / "out").exists()


def test_cli_refuses_a_folder_holding_another_run(tmp_path: Path, toy: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, output = _cli(
        ["finetune", "--model", NO_MODEL, "--tasks", str(toy), "--output", str(out)]
    )
    assert code == 2 and "not empty and holds no hakari fine-tuning run" in output


def test_run_with_a_missing_adapter_fails_before_any_model(tmp_path: Path) -> None:
    for folder, message in [
        (tmp_path / "missing", "does not exist"),
        (tmp_path, "no adapter_config.json"),
    ]:
        code, output = _cli(
            ["run", "--model", f"smollm2-135m+adapter:{folder}", "--tasks", "demo_sentiment_en",
             "--output", str(tmp_path / "run")]
        )  # fmt: skip
        assert code == 2 and message in " ".join(output.split()), output
        assert not (tmp_path / "run" / "results.json").exists()

"""Hostile input to `hakari finetune` (task sweeps and `--mixture`): every setting is one
`error:` line naming the option (exit code 2) before the base model loads, and nothing
reports `trained` without training.

`no_model_loads` replaces the fine-tuning model loader (and every other) with one that
fails the test if called."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app
from hakari.errors import HakariInputError
from tests.helpers.cli import assert_one_line
from tests.helpers.finetune import write_base_mixture, write_space_task, write_toy_task

runner = CliRunner()


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    return write_toy_task(tmp_path / "task", n_train=6)


def finetune(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["finetune", *args, "--output", str(tmp_path / "out")])
    return result.exit_code, result.output


SETTING_CASES = {
    # late errors: found by the Trainer or peft after the base model loaded
    "lr-negative": (["--lr", "-1"], ["--learning-rate", "-1"]),
    "lr-nan": (["--lr", "nan"], ["--learning-rate", "nan"]),
    "optim-unknown": (["--optim", "bogus"], ["--optim", "bogus", "adamw_torch"]),
    "target-modules-unknown": (
        ["--target-modules", "q_proj,no_such_proj"],
        ["--target-modules", "no_such_proj", "q_proj"],
    ),
    # silently wrong: 0 steps, then "status": "trained"
    "epochs-negative": (["--epochs", "-5"], ["--epochs", "-5"]),
    "epochs-zero": (["--epochs", "0"], ["--epochs"]),
    "epochs-inf": (["--epochs", "inf"], ["--epochs"]),
    "lora-dropout-one": (["--lora-dropout", "1"], ["--lora-dropout"]),
    "seed-negative": (["--seed", "-1"], ["--seed"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(SETTING_CASES))
def test_settings_are_checked_before_the_model_loads(
    tmp_path: Path, toy: Path, no_model_loads: list[str], case: str
) -> None:
    args, needles = SETTING_CASES[case]
    code, out = finetune(tmp_path, "--model", "smollm2-135m", "--tasks", str(toy), *args)
    assert_one_line(code, out, *needles)
    assert not no_model_loads
    assert not (tmp_path / "out").exists()


MIXTURE_CASES = {
    "decoding-unknown": (["--decoding", "bogus"], ["--decoding", "bogus"]),
    "validation-ratio-nan": (["--validation-ratio", "nan"], ["--validation-ratio"]),
    "test-ratio-negative": (["--test-ratio", "-0.1"], ["--test-ratio"]),
    "lr-zero": (["--lr", "0"], ["--learning-rate"]),
}


@pytest.mark.parametrize("case", sorted(MIXTURE_CASES))
def test_mixture_settings_are_checked_before_training(
    tmp_path: Path, toy: Path, no_model_loads: list[str], case: str
) -> None:
    """`--decoding bogus` was found by the evaluation after the first adapter trained."""
    base = write_base_mixture(tmp_path / "base.jsonl", 10)
    args, needles = MIXTURE_CASES[case]
    code, out = finetune(
        tmp_path, "--model", "smollm2-135m", "--mixture", str(base), "--target", str(toy),
        "--n-target", "0,2", "--resamples", "1", *args,
    )  # fmt: skip
    assert_one_line(code, out, *needles)
    assert not no_model_loads


def test_counts_that_size_the_plan_are_checked_against_memory(
    tmp_path: Path,
    toy: Path,
    no_model_loads: list[str],
    memory_available: Callable[[int], None],
) -> None:
    """Every example (and every planned mixture) is built before training starts:
    `--upsample-to` and `--resamples` size those lists."""
    memory_available(256 << 20)
    code, out = finetune(
        tmp_path, "--model", "smollm2-135m", "--tasks", str(toy), "--upsample-to", str(10**12)
    )
    assert_one_line(code, out, "--upsample-to", "memory")
    base = write_base_mixture(tmp_path / "base.jsonl", 10)
    code, out = finetune(
        tmp_path, "--model", "smollm2-135m", "--mixture", str(base), "--target", str(toy),
        "--n-target", "0,2", "--resamples", str(10**9),
    )  # fmt: skip
    assert_one_line(code, out, "--resamples", "memory")
    assert not no_model_loads


def test_python_entry_point_checks_the_settings(toy: Path, tmp_path: Path) -> None:
    """`plan_sweep` (the Python side of the command) refuses what the CLI refuses."""
    from hakari.finetune.config import LoraSettings, TrainSettings
    from hakari.finetune.sweep import load_task_data, plan_sweep

    tasks = load_task_data([str(toy)], None)
    for settings, option in [
        (TrainSettings(learning_rate=float("nan")), "--learning-rate"),
        (TrainSettings(epochs=-5), "--epochs"),
        (TrainSettings(optimizer="bogus"), "--optim"),
        (TrainSettings(lora=LoraSettings(r=0)), "--lora-r"),
        (TrainSettings(batch_size=0), "--batch-size"),
    ]:
        with pytest.raises(HakariInputError, match=option):
            plan_sweep(
                model="smollm2-135m", tasks=tasks, templates="all", sizes_text="all",
                upsample_to=None, seed=0, settings=settings, output=tmp_path / "o",
                prompt_format="auto", device="cpu", cache_dir=None,
            )  # fmt: skip


def test_target_modules_of_a_local_folder_are_checked_from_its_config(
    tmp_path: Path, toy: Path, no_model_loads: list[str]
) -> None:
    """An `hf:` folder's architecture is read from its config.json, without its weights."""
    folder = tmp_path / "model"
    folder.mkdir()
    config = {"model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"]}
    (folder / "config.json").write_text(json.dumps(config))
    code, out = finetune(
        tmp_path, "--model", f"hf:{folder}", "--tasks", str(toy), "--target-modules", "c_attn"
    )
    assert_one_line(code, out, "--target-modules", "c_attn", "o_proj")
    assert not no_model_loads


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("space:0", "write space:N"),
        ("space:abc", "write space:N"),
        ("space:-3", "write space:N"),
        ("space:9", "more templates than the space"),
        ("space:99999999999999999999", "more templates than the space"),
        ("space:2,en_plain.upper.answer", "cannot be combined"),
        ("space:2@x", "write space:N"),
        ("no_such.template.id", "unknown template id"),
    ],
)
def test_a_bad_space_selection_is_one_line_before_the_model(
    tmp_path: Path, no_model_loads: list[str], value: str, needle: str
) -> None:
    task = write_space_task(tmp_path / "task")
    code, out = finetune(tmp_path, "--tasks", str(task), "--templates", value)
    assert_one_line(code, out, needle, "--templates")
    assert not no_model_loads


def test_a_space_selection_on_a_task_without_a_space_is_one_line(
    tmp_path: Path, toy: Path, no_model_loads: list[str]
) -> None:
    code, out = finetune(tmp_path, "--tasks", str(toy), "--templates", "space:2")
    assert_one_line(code, out, "has no prompt space", "--templates")
    code, out = finetune(
        tmp_path, "--mixture", str(write_base_mixture(tmp_path / "m.jsonl", 20)),
        "--target", str(toy), "--templates", "space:2",
    )  # fmt: skip
    assert_one_line(code, out, "has no prompt space", "--templates")
    assert not no_model_loads

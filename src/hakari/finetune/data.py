"""Training examples: which instances, how many times, in which split.

* Task examples reuse `hakari.tasks.export` (templates × training instances, the target in each
  template's answer format), so training and `hakari tasks export` never disagree.
* `nested_sample` is the training-size sweep's sampling (seed 000, Appendix D.4): one
  seeded permutation of the split, and every size takes a prefix of it, so the 100
  contain the 10 and a size's instances never depend on which other sizes are trained.
* `upsample` repeats a sample cyclically to a total ("10 sentences 100 times").
* `hash_split` is IFTEval's leak-proof split (seed 003): md5 of the example, modulo 10^9,
  against the validation and test shares. Exact integer arithmetic (the original takes
  the 128-bit hash modulo a float).
* `read_mixture` reads a base instruction mixture (JSONL of prompt/response, or Alpaca's
  instruction/input/output) and names the file, line and field of any bad row.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hakari._util.jsonl import iter_jsonl
from hakari.errors import HakariInputError
from hakari.tasks.data import Row, iter_rows
from hakari.tasks.export import instance_training_rows
from hakari.tasks.families import load_tasks
from hakari.tasks.loader import Task
from hakari.tasks.prompts import select_templates
from hakari.tasks.space import expand_task
from hakari.tasks.spec import Template

Split = Literal["train", "validation", "test"]
HASH_MODULUS = 10**9


@dataclass(frozen=True)
class Example:
    """One training example: the prompt as the evaluation renders it, the answer."""

    prompt: str
    target: str
    source: str  # e.g. "jcola#12@0-0" (task#instance@template) or "base.jsonl:7"


def train_rows(task: Task, *, split: str = "train", data_dir: Path | None) -> list[Row]:
    """Every row of the task's training split (a clear error when there is none)."""
    rows = list(iter_rows(task.spec, split=split, data_dir=data_dir, task_dir=task.task_dir))
    if not rows:
        raise HakariInputError(f"split {split!r} has no instances", file=str(task.path))
    return rows


def parse_sizes(text: str, available: int) -> list[int]:
    """`1,10,100,all` → sizes; 'all' is every instance (seed 000 footnote 13: where a task
    has fewer than 10,000, "all available training data"). A size over the data is an
    error that says how many there are."""
    sizes: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part == "all":
            sizes.append(available)
            continue
        try:
            n = int(part)
        except ValueError:
            raise HakariInputError(
                f"{part!r} is not a number or 'all'", field="--train-size"
            ) from None
        if n < 1:
            raise HakariInputError(f"{n} must be at least 1", field="--train-size")
        if n > available:
            raise HakariInputError(
                f"{n} is more than the {available} training instances there are "
                "(use 'all' for every instance)",
                field="--train-size",
            )
        sizes.append(n)
    if not sizes:
        raise HakariInputError("no size given", field="--train-size")
    return list(dict.fromkeys(sizes))


def example_bytes(examples: Sequence[Example]) -> int:
    """About the memory `examples` take: their texts (up to 4 bytes a character) and the
    objects around them; for checking a count of examples against memory before they are
    built (`--upsample-to`, `--resamples`)."""
    return sum(4 * (len(e.prompt) + len(e.target) + len(e.source)) + 200 for e in examples)


def nested_sample(n_available: int, size: int, seed: int) -> list[int]:
    """Instance indices: the first `size` of one seeded permutation of all indices."""
    if not 0 <= size <= n_available:
        raise ValueError(f"size {size} outside 0..{n_available}")
    order = list(range(n_available))
    random.Random(seed).shuffle(order)
    return order[:size]


def upsample(indices: Sequence[int], total: int) -> list[int]:
    """`indices` repeated cyclically to `total` (whole passes first, then a prefix of
    the next pass); a sample already that large is returned unchanged."""
    if not indices:
        raise ValueError("nothing to upsample")
    if len(indices) >= total:
        return list(indices)
    return [indices[i % len(indices)] for i in range(total)]


def load_training_tasks(
    names: Sequence[str], templates: str | Sequence[str], data_dir: Path | None
) -> list[Task]:
    """The tasks to train on (built-in names, task files, family members such as
    `jmmlu:marketing`), each with the templates `--templates` asks for: a space's
    `space:N` is generated as `hakari run` generates it (the same seeded sample, so the
    adapter is evaluated on the templates it was trained on); bad selections are one
    `HakariInputError` naming `--templates`."""
    return [expand_task(task, templates, data_dir=data_dir) for task in load_tasks(names)]


def task_examples(
    task: Task, rows: Sequence[Row], indices: Sequence[int], templates: str | Sequence[str]
) -> list[Example]:
    """Every selected template for each index (repeats kept: upsampling repeats)."""
    chosen = select_templates(task.spec, templates)
    out: list[Example] = []
    for index in indices:
        out.extend(_instance_examples(task, rows, index, chosen))
    return out


def _instance_examples(
    task: Task, rows: Sequence[Row], index: int, chosen: Sequence[Template]
) -> list[Example]:
    return [
        Example(
            prompt=row["prompt"],
            target=row["target"],
            source=f"{row['task']}#{row['index']}@{row['template_id']}",
        )
        for row in instance_training_rows(task, chosen, rows[index], index)
    ]


def hash_split(key: str, validation: float, test: float) -> Split:
    """train / validation / test from md5(key) mod 10^9 (IFTEval's scheme)."""
    if validation < 0 or test < 0 or validation + test >= 1:
        raise ValueError("validation and test shares must be >= 0 and sum below 1")
    bucket = int(hashlib.md5(key.encode("utf-8")).hexdigest(), 16) % HASH_MODULUS
    validation_end = round(validation * HASH_MODULUS)  # integer thresholds: no float edge
    test_end = validation_end + round(test * HASH_MODULUS)
    if bucket < validation_end:
        return "validation"
    if bucket < test_end:
        return "test"
    return "train"


def row_key(task_name: str, row: Row) -> str:
    """What a task instance is hashed by: its content, so every template of one instance
    lands in the same split and test instances never leak into training."""
    return task_name + "\0" + json.dumps(row, ensure_ascii=False, sort_keys=True, default=str)


def example_key(example: Example) -> str:
    return json.dumps(
        {"prompt": example.prompt, "response": example.target}, ensure_ascii=False, sort_keys=True
    )


def read_mixture(path: Path) -> list[Example]:
    """A base instruction mixture: JSON Lines with string `prompt` and `response`, or
    Alpaca's `instruction` (+ optional `input`) and `output`."""
    if not path.is_file():
        raise HakariInputError("mixture file not found", file=str(path), field="--mixture")
    out = [_mixture_example(path, n, row) for n, row in iter_jsonl(path, field="--mixture")]
    if not out:
        raise HakariInputError("the mixture has no rows", file=str(path), field="--mixture")
    return out


def _mixture_example(path: Path, lineno: int, row: Row) -> Example:
    if "prompt" in row or "response" in row:
        fields = {"prompt": row.get("prompt"), "response": row.get("response")}
    elif "instruction" in row:
        fields = {"instruction": row.get("instruction"), "output": row.get("output")}
        if row.get("input") is not None:
            fields["input"] = row["input"]
    else:
        raise HakariInputError(
            f"line {lineno} needs 'prompt' and 'response' (or 'instruction' and 'output')",
            file=str(path),
        )
    for name, value in fields.items():
        if not isinstance(value, str) or (name != "input" and not value.strip()):
            raise HakariInputError(
                f"line {lineno}: {name!r} must be a non-empty string", file=str(path), field=name
            )
    if "prompt" in fields:
        prompt, response = str(fields["prompt"]), str(fields["response"])
    else:
        extra = str(fields.get("input") or "")
        prompt = str(fields["instruction"]) + (f"\n\n{extra}" if extra.strip() else "")
        response = str(fields["output"])
    return Example(prompt=prompt, target=response, source=f"{path.name}:{lineno}")


def examples_digest(examples: Sequence[Example]) -> str:
    """sha256 of the examples in order: what config.json records as the data's identity."""
    digest = hashlib.sha256()
    for ex in examples:
        digest.update(json.dumps([ex.prompt, ex.target], ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()

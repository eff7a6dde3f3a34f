"""Task files with a prompt space, written the way a user (or a hostile one) would."""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

CHOICES = ["red", "green", "blue", "black"]


def space_task(
    folder: Path,
    space: str,
    *,
    name: str = "mc",
    extra: str = "",
    rows: int = 8,
    question: str = "q",
) -> Path:
    """`folder/<name>.yaml`: a four-choice task over `folder/mc.jsonl` (rows `q`, `opts`,
    `gold`), its `space:` block the given YAML lines (indented by two spaces)."""
    data = folder / "mc.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for i in range(rows):
            opts = [f"{c}{i}" for c in CHOICES]
            fh.write(json.dumps({"q": f"question {i}?", "opts": opts, "gold": "ABCD"[i % 4]}))
            fh.write("\n")
    path = folder / f"{name}.yaml"
    path.write_text(
        f"""name: {name}
language: en
data:
  eval_split: test
  splits: {{test: {{file: {data}}}, dev: {{file: {data}}}}}
target: gold
answer_type: choice
choices: {{field: opts, count: 4, gold: letter}}
metrics: [accuracy]
max_new_chars: 8
{extra}
space:
  question: {question}
  shots_split: dev
{space}
""",
        encoding="utf-8",
    )
    return path


def text_dimensions(n_dims: int, n_levels: int) -> str:
    """A space block of `n_dims` text dimensions of `n_levels` levels each (a space of
    n_levels ** n_dims templates), all placed in `block`."""
    names = [f"d{i}" for i in range(n_dims)]
    block = "".join("{" + n + "}" for n in names) + "{question}\\n{choices}\\n{answer_cue}"
    lines = [f'  block: "{block}"', "  dimensions:"]
    for n in names:
        levels = ", ".join(f'{{l{j}: "{n}{j} "}}' for j in range(n_levels))
        lines.append(f"    {n}: [{levels}]")
    lines.append("    answer_cue: [answer]")
    return "\n".join(lines) + "\n"


def jmmlu_csv(folder: Path, subject: str, rows: list[list[str]]) -> Path:
    """`folder/jmmlu/<subject>.csv` in upstream's layout (no header: question, the four
    choices, the answer letter): what `--data-dir folder` reads for `jmmlu:<subject>`."""
    path = folder / "jmmlu" / f"{subject}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


def sample_before_issue_38(space: Any, n: int, seed: int) -> list[dict[str, str]]:
    """`space:N` as the sampler before issue 38 drew it (every swap recounted every row):
    the reference the faster sampler must equal up to half the space, and the baseline of
    benchmarks/bench_space_expand.py. Past its 200·n swaps it fell back to an approximate
    fill (not reproduced: AssertionError)."""
    rng = random.Random(f"hakari-space:{seed}")
    dims = list(space.dimensions)
    columns = []
    for dim in dims:
        names = list(space.dimensions[dim])
        rng.shuffle(names)
        col = [names[i % len(names)] for i in range(n)]
        rng.shuffle(col)
        columns.append(col)
    rows = [tuple(col[i] for col in columns) for i in range(n)]
    for _ in range(200 * n):
        counts = Counter(rows)
        dup = next((i for i, r in enumerate(rows) if counts[r] > 1), None)
        if dup is None:
            return [dict(zip(dims, r, strict=True)) for r in rows]
        j, d = rng.randrange(n), rng.randrange(len(dims))
        a, b = list(rows[dup]), list(rows[j])
        a[d], b[d] = b[d], a[d]
        rows[dup], rows[j] = tuple(a), tuple(b)
    raise AssertionError("the sampler before issue 38 needed its fallback here")

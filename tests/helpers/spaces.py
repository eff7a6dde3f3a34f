"""Task files with a prompt space, written the way a user (or a hostile one) would."""

from __future__ import annotations

import csv
import json
from pathlib import Path

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

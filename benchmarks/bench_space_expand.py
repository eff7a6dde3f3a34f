"""How long `--templates space:N` takes before any model: the balanced sample and the
whole expansion (levels -> prompts, regexes, answers, checked), against bare baselines in
the same rounds.

Sampler: `spacesample.balanced_sample` on JMMLU's space (9,072 templates) and on a text
space of 10^12, against the sampler before issue 38 (every swap recounted every row; run
only where it returns in seconds). Expansion: `space.expand_task` on a JMMLU subject,
against building the same templates' `Template` records from their finished text (the
validation every template gets, whatever derives it).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_space_expand.py [--rounds 3] [--smoke]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from timing import REPO, add_smoke_flag, best_of_rounds, skip

sys.path.insert(0, str(REPO))  # tests.helpers.spaces: the sampler before issue 38

from tests.helpers.spaces import sample_before_issue_38

from hakari.tasks.families import load_tasks
from hakari.tasks.loader import load_task
from hakari.tasks.space import expand_task
from hakari.tasks.spacesample import balanced_sample
from hakari.tasks.spacespec import SpaceSpec
from hakari.tasks.spec import Template

DATA = REPO.parent / "shared" / "datasets"
OLD_SAMPLER_UP_TO = 3000  # beyond, the old sampler takes minutes to hours (or falls back)


def huge_space(folder: Path) -> SpaceSpec:
    """A text space of 12 dimensions of 10 levels (10^12 templates)."""
    names = [f"d{i}" for i in range(12)]
    block = "".join("{" + n + "}" for n in names) + "{question}\\n{choices}\\n{answer_cue}"
    dims = "".join(
        f"    {n}: [" + ", ".join(f'{{l{j}: "{n}{j} "}}' for j in range(10)) + "]\n" for n in names
    )
    (folder / "d.jsonl").write_text('{"q": "x", "opts": ["a", "b", "c", "d"], "gold": "A"}\n')
    (folder / "huge.yaml").write_text(
        f"name: huge\nlanguage: en\ndata: {{eval_split: t, splits: {{t: {{file: d.jsonl}}}}}}\n"
        "target: gold\nanswer_type: choice\nchoices: {field: opts, count: 4, gold: letter}\n"
        f'metrics: [accuracy]\nspace:\n  question: q\n  block: "{block}"\n  dimensions:\n'
        f"{dims}    answer_cue: [answer]\n"
    )
    space = load_task(folder / "huge.yaml").spec.space
    assert space is not None
    return space


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if not (DATA / "jmmlu").is_dir():
        skip(f"JMMLU is not under {DATA}")
    counts = [100] if args.smoke else [100, 1000, 3000, 5000, 9071]
    rounds = 1 if args.smoke else args.rounds
    (task,) = load_tasks(["jmmlu:marketing"])
    jmmlu = task.spec.space
    assert jmmlu is not None
    with tempfile.TemporaryDirectory() as folder:  # the task file is read at once
        huge = huge_space(Path(folder))

    print("sampler (seconds, best of rounds)")
    print(f"{'space':>8} {'N':>6} {'hakari':>9} {'before':>9} {'ratio':>7}")
    for name, space in (("JMMLU", jmmlu), ("10^12", huge)):
        for n in [*counts, *([10_000] if name == "10^12" and not args.smoke else [])]:
            runs = {"hakari": lambda s=space, n=n: balanced_sample(s, n, 0)}
            if n <= OLD_SAMPLER_UP_TO:
                runs["before"] = lambda s=space, n=n: sample_before_issue_38(s, n, 0)
            best = best_of_rounds(runs, rounds, alternate=True)
            before = best.get("before")
            shown = (
                f"{before:9.3f} {before / best['hakari']:6.1f}x" if before else f"{'-':>9} {'-':>7}"
            )
            print(f"{name:>8} {n:>6} {best['hakari']:9.3f} {shown}")

    print("\nexpansion of jmmlu:marketing (seconds, best of rounds)")
    print(f"{'N':>6} {'expand_task':>12} {'Template only':>14} {'ratio':>7} {'µs/template':>12}")
    for n in counts:
        done = expand_task(task, f"space:{n}", data_dir=DATA).spec.templates
        fields = [t.model_dump() for t in done]
        best = best_of_rounds(
            {
                "expand": lambda n=n: expand_task(task, f"space:{n}", data_dir=DATA),
                "bare": lambda f=fields: [Template(**x) for x in f],
            },
            rounds,
            alternate=True,
        )
        ratio = best["expand"] / best["bare"]
        per = 1e6 * best["expand"] / n
        print(f"{n:>6} {best['expand']:12.3f} {best['bare']:14.3f} {ratio:6.1f}x {per:12.0f}")


if __name__ == "__main__":
    main()

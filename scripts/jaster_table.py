"""docs/results/jaster.md's table: for each jaster set and model, llm-jp-eval's own template
(one run's `--templates 0-4`, or `0-0` for MGSM) beside the prompt space (another run's
`--templates space:16`): the template's score with its interval over items, the space's
mean with its interval over templates × items, std, Sharpe score with its interval and
min–max, each on the set's llm-jp-eval metric (the leaderboard view's).

    python scripts/jaster_table.py REFERENCE_RUN SPACE_RUN [MORE_REFERENCE SPACE ...]

Each argument is a run folder or its results.json; runs are read in pairs (the reference
run, then the space run, or `-` where the space has not run: its columns say `–`); a set
that ran in one run of a pair and not the other is left out with a line on standard error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hakari.errors import HakariInputError
from hakari.reports.inputs import load_inputs
from hakari.results import EvalResults

DECODING = "greedy"
FAMILY = "jaster"
NO_SPACE = "-"  # in a space run's place: the set's space has not run


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"


def leaderboard_metrics(run: EvalResults, model: str) -> dict[str, str]:
    """Set -> the metric its llm-jp-eval category scores it on, from the run's view."""
    views = (run.leaderboards or {}).get(FAMILY, {}).get(model, {})
    view = views.get(DECODING)
    if view is None:
        return {}
    return {s: m for c in view.categories.values() for s, m in c.members.items()}


def rows(reference: EvalResults, space: EvalResults | None) -> list[str]:
    """One Markdown row per (set, model) that ran in both runs (in the reference run, where
    the space did not run); a set in no category (mgsm, commonsensemoralja) on its first
    metric, llm-jp-eval's."""
    out = []
    for model, ran in (space or reference).models.items():
        metrics = leaderboard_metrics(space or reference, model)
        for task, result in ran.tasks.items():
            metric = metrics.get(task, result.metrics[0])
            ref_task = reference.models.get(model)
            ref = None if ref_task is None else ref_task.tasks.get(task)
            if ref is None:
                print(f"{task} · {model}: not in both runs, left out", file=sys.stderr)
                continue
            ((template_id, template),) = ref.decodings[DECODING].templates.items()
            ci = (template.ci or {}).get(metric)
            ref_ci = _interval(ci.low, ci.high) if ci else ""
            head = (
                f"| `{task}` | {model} | {metric} | `{template_id}` "
                f"{template.metrics[metric]:.3f}{ref_ci} "
            )
            if space is None:
                out.append(head + "| – | – | – | – | – |")
                continue
            agg = result.decodings[DECODING].aggregate[metric]
            out.append(
                head + f"| {agg.mean:.3f}{_interval(agg.ci_low, agg.ci_high)} | {agg.std:.3f} "
                f"| {agg.sharpe:.3f}{_interval(agg.sharpe_ci_low, agg.sharpe_ci_high)} "
                f"| {agg.min:.3f}–{agg.max:.3f} | {agg.n_templates} |"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "runs", nargs="+", help=f"reference run, space run (or {NO_SPACE}: not run), ..."
    )
    args = parser.parse_args(argv)
    if len(args.runs) % 2:
        parser.error("runs come in pairs: a reference run, then its space run")
    if NO_SPACE in args.runs[::2]:
        parser.error(f"a pair starts with its reference run, not {NO_SPACE}")
    given = [Path(r) for r in args.runs if r != NO_SPACE]
    try:  # every run read before the table starts: a bad one is one line, exit 2
        loaded = load_inputs(given)  # the reports' reader: one definition
        if len(loaded.runs) != len(given):
            raise HakariInputError("a meta-evaluation file is not a run", field="runs")
        read = iter([run.results for run in loaded.runs])
        runs = [None if r == NO_SPACE else next(read) for r in args.runs]
        pairs = [(ref, space) for ref, space in zip(runs[::2], runs[1::2], strict=True) if ref]
    except (OSError, HakariInputError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(
        "| set | model | metric | llm-jp-eval's template [CI] | space mean [CI] | std "
        "| Sharpe [CI] | min–max | templates |"
    )
    print("|---|---|---|---|---|---:|---|---|---:|")
    for reference, space in pairs:
        for row in rows(reference, space):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())

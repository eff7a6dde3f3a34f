"""A family's leaderboard view as rows (`results.leaderboards`, `runner.leaderboard`):
one section per family × model × decoding, the same for the terminal and Markdown."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from hakari.results import EvalResults, FamilyScore, Leaderboard


@dataclass(frozen=True)
class LeaderboardSection:
    title: str
    header: list[str]
    rows: list[list[str]]
    note: str


def _mean_ci(score: FamilyScore | None) -> str:
    if score is None:
        return "–"
    if score.ci_low is None or score.ci_high is None:
        return f"{score.mean:.3f}"
    return f"{score.mean:.3f} [{score.ci_low:.3f}, {score.ci_high:.3f}]"


def _value(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _range(score: FamilyScore | None) -> str:
    return "–" if score is None else f"{score.min:.3f}–{score.max:.3f}"


def leaderboard_section(title: str, view: Leaderboard) -> LeaderboardSection:
    """Each category (partial ones marked) and Nejumi's average: on the leaderboard's
    template, and over the templates with the mean's interval and the min–max."""
    ref = view.reference_template
    rows = [
        [
            name + (" (partial)" if c.partial else ""),
            ", ".join(c.members),
            _value(c.reference),
            _mean_ci(c.score),
            _range(c.score),
        ]
        for name, c in view.categories.items()
    ]
    nejumi = view.nejumi
    rows.append(
        ["Nejumi", "0-/2-shot", _value(view.nejumi_reference), _mean_ci(nejumi), _range(nejumi)]
    )
    note = (
        f"Categories as {view.source}: the mean of the sets' scores, each on its "
        f"leaderboard metric; {ref} = on the leaderboard's template, mean = over the "
        "templates every set ran, with its interval over templates × items. Partial: "
        "sets of the category did not run (results.json names them), not the "
        "leaderboard's number. Nejumi: per wording, each set's (0-shot + 2-shot) / 2, "
        "averaged over the sets."
    )
    header = ["category", "sets", ref, "mean [CI]", "min–max"]
    return LeaderboardSection(f"leaderboard view · {title}", header, rows, note)


def leaderboard_sections(results: EvalResults) -> Iterator[LeaderboardSection]:
    for family, per_model in (results.leaderboards or {}).items():
        for model, per_decoding in per_model.items():
            for decoding, view in per_decoding.items():
                yield leaderboard_section(f"{family} · {model} · {decoding}", view)

"""`hakari pfgen leaderboard --html`: the pfgen-bench leaderboard as a self-contained page:
the ranked table with each score's bootstrap CI (entries without trials show the
published number and no CI, never an invented one), the flags for differing temperature
or trial counts, a forest plot of score ± CI and the F/T/H scatter plots of the paper
(Imajo et al., 2024, Figures 1–3)."""

from __future__ import annotations

from collections.abc import Sequence

from hakari.pfgen.leaderboard import Entry
from hakari.reports import charts
from hakari.reports.markup import ci, esc, num, table
from hakari.reports.style import CSS


def leaderboard_html(entries: Sequence[Entry], title: str = "pfgen-bench leaderboard") -> str:
    """`entries` ranked as `leaderboard.flag_and_rank` returns them."""
    rows = []
    for rank, e in enumerate(entries, start=1):
        flags = "".join(f'<span class="flag">{esc(f)}</span>' for f in e.flags)
        rows.append(
            [
                str(rank),
                f'<span class="model">{esc(e.model)}</span>',
                esc(e.mode or "–"),
                num(e.temperature, 1),
                esc(e.num_trials),
                f"<b>{num(e.score, 4)}</b> "
                + (ci(e.ci_low, e.ci_high, 4) or '<span class="ci">no trials, no CI</span>'),
                num(e.fluency),
                num(e.truthfulness),
                num(e.helpfulness),
                num(e.length, 1),
                flags,
            ]
        )
    header = ["#", "model", "mode", "temp", "trials", "score [95% CI]", "F", "T", "H",
              "length", "flags"]  # fmt: skip
    ranked = table(header, rows, cls="leaderboard", numeric_from=3)
    forest = charts.ci_forest(
        [f"{i}. {e.model}" for i, e in enumerate(entries, start=1)],
        [e.score for e in entries],
        [e.ci_low for e in entries],
        [e.ci_high for e in entries],
        "score (mean of F, T, H) with 95% CI",
        key="pfgen-forest",
    )
    scatter = charts.fth_scatter(
        [
            {
                "model": e.model,
                "fluency": e.fluency,
                "truthfulness": e.truthfulness,
                "helpfulness": e.helpfulness,
            }
            for e in entries
        ],
        key="pfgen-fth",
    )
    flagged = any(e.flags for e in entries)
    note = (
        '<p class="note">flags: the temperature or the trial count differs from the most '
        "common one, or (partial) the score covers only part of the question set, so the "
        "score is not comparable as is.</p>"
        if flagged
        else ""
    )
    return (
        '<!DOCTYPE html><html lang="ja"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<header class="top"><h1>{esc(title)}</h1><p class="meta">{len(entries)} entries · '
        "CIs: bootstrap over trials and questions where the trials are available; none "
        "where only a published result.json is</p></header>"
        f'<section id="leaderboard"><h2>Ranking</h2>{ranked}{note}</section>'
        f'<section id="scores"><h2>Score with 95% CI</h2><figure class="forest">{forest}'
        "</figure></section>"
        '<section id="fth"><h2>Fluency, truthfulness, helpfulness</h2>'
        f'<figure class="fth">{scatter}<figcaption>Each point is one entry, labelled with '
        "its rank; cf. pfgen-bench (Imajo et al., 2024), Figures 1–3.</figcaption></figure>"
        "</section><footer>made by hakari · self-contained: no scripts, no external "
        "resources</footer></body></html>"
    )

"""The numeric views of one task × decoding × metric: the leaderboard (mean, std, Sharpe
with their bootstrap CIs, rank by mean against rank by Sharpe, chance and fallback) and
the per-template heatmap (models × templates, fallback rate in every cell).

The heatmap is an HTML table coloured with a matplotlib colormap rather than an image:
the numbers stay selectable and searchable, and a page with a hundred of them stays
small and fast (a drawn heatmap costs ~30 kB and ~0.1 s each).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hakari.reports.markup import ci, esc, num, pct, table
from hakari.reports.rows import LEVEL_HEADER, SPACE_HEADER, mean_fallback, space_sections
from hakari.reports.verdict import FALLBACK_WIN, Decided
from hakari.results import DecodingResult, TaskResult
from hakari.results.paired import ModelGroups, PairedComparison, PairedStatistic, Verdict
from hakari.results.stats import AggregateStats

# A metric whose natural range is [-1, 1] is coloured on that range, the rest on [0, 1].
SIGNED_METRICS = {"mcc", "pearson", "spearman", "kendall"}


def ranks(values: Mapping[str, float | None]) -> dict[str, int]:
    """Competition ranks (1, 2, 2, 4) by descending value; missing values rank last."""
    present = {k: v for k, v in values.items() if isinstance(v, int | float) and v == v}
    out: dict[str, int] = {}
    for k, v in present.items():
        out[k] = 1 + sum(1 for other in present.values() if other > v)
    for k in values:
        out.setdefault(k, len(present) + 1)
    return out


def _rank_cell(model: str, decided: Decided | None, order: str, others: Sequence[str]) -> str:
    """The model's rank where the tests tell it from others ("tied" where they do not),
    the order of the point estimates on hover; "–" for a model no test compared."""
    if not others:
        return "1"
    rank = decided.rank(model) if decided is not None else None
    if decided is None or rank is None:
        why = "not compared: no paired test with the other models (another run, or no bootstrap)"
        return f'<span class="na" title="{esc(why + "; " + order)}">–</span>'
    shared = any(decided.rank(m) == rank for m in others)
    text = ("tied" if rank == 1 else f"{rank} (tied)") if shared else str(rank)
    return f'<span title="{esc(order)}">{text}</span>'


def _fallback_flag(dec: DecodingResult) -> str:
    """Beside a model whose outputs mostly did not parse: its score is the fallback's."""
    rate = mean_fallback(dec)
    if rate is None or rate < FALLBACK_WIN:
        return ""
    return f'<span class="flag">{pct(rate)} of outputs unparsed: scored as the fallback</span>'


def _flags(stats: AggregateStats) -> str:
    notes: list[str] = []
    for key in ("flags", "warnings", "notes"):  # keys other versions or tools may add
        value = (stats.model_extra or {}).get(key)
        if isinstance(value, str):
            notes.append(value)
        elif isinstance(value, list | tuple):
            notes.extend(str(v) for v in value)
    recorded = "sharpe_caveat" in stats.model_fields_set  # absent in older files
    if stats.sharpe_caveat == "negative_mean" or (not recorded and stats.mean < 0):
        notes.append("mean < 0: a larger std raises Sharpe")
    return "".join(f'<span class="flag">{esc(n)}</span>' for n in notes)


def _estimated_flag(dec: DecodingResult) -> str:
    """A budgeted decoding: how much of the grid its numbers were estimated from."""
    if dec.budget is None:
        return ""
    design = dec.budget.design
    title = (
        f"{design.cells_run:,} of {design.grid_size:,} template × instance cells run; "
        f"{dec.budget.estimator.name} v{dec.budget.estimator.version}"
    )
    return (
        f'<span class="flag estimated" title="{esc(title)}">'
        f"≈ estimated from {design.fraction:.0%} of the grid</span>"
    )


def _statistics_cells(s: AggregateStats | None) -> list[str]:
    """mean, std, Sharpe (each with its CI) and min – max."""
    if s is None:
        return ["– ", "– ", "<b>–</b> ", "– – –"]
    return [
        num(s.mean) + " " + ci(s.ci_low, s.ci_high),
        num(s.std) + " " + ci(s.std_ci_low, s.std_ci_high),
        f"<b>{num(s.sharpe)}</b> " + ci(s.sharpe_ci_low, s.sharpe_ci_high),
        f"{num(s.min)} – {num(s.max)}",
    ]


def leaderboard(
    models: Mapping[str, tuple[TaskResult, DecodingResult]],
    metric: str,
    decided: Decided | None = None,
) -> str:
    """One row per model, ranked where the paired tests (`decided`) say one model is
    better than another, tied otherwise; within a rank, by Sharpe score."""
    stats = {m: dec.aggregate.get(metric) for m, (_, dec) in models.items()}
    by_mean = ranks({m: s.mean if s else None for m, s in stats.items()})
    by_sharpe = ranks({m: s.sharpe if s else None for m, s in stats.items()})
    tested = {m: decided.rank(m) if decided else None for m in models}
    order = sorted(models, key=lambda m: (tested[m] or len(models) + 1, by_sharpe[m], m))
    alpha = next((s.alpha for s in stats.values() if s is not None), 1.0)
    rows = []
    for model in order:
        task, dec = models[model]
        s = stats[model]
        estimate = f"by point estimate: Sharpe #{by_sharpe[model]}, mean #{by_mean[model]}"
        rows.append(
            [
                _rank_cell(model, decided, estimate, [m for m in models if m != model]),
                f'<span class="model">{esc(model)}</span>{_fallback_flag(dec)}',
                *_statistics_cells(s),
                num(task.chance.get(metric)),
                pct(mean_fallback(dec)),
                str(len(dec.templates)),
                (_flags(s) if s is not None else "") + _estimated_flag(dec),
            ]
        )
    header = [
        "rank",
        "model",
        "mean [95% CI]",
        "std [95% CI]",
        f"Sharpe α={esc(alpha)} [95% CI]",
        "min – max",
        "chance",
        "fallback",
        "templates",
        "notes",
    ]
    caption = (
        "rank: a model ranks above another only where the paired test of the Sharpe "
        "scores (95%) finds it better, tied otherwise; hover a rank for the order of the "
        "point estimates"
    )
    return table(header, rows, cls="leaderboard", caption=caption, numeric_from=2)


def _colour(value: float, low: float, high: float) -> tuple[str, str]:
    from matplotlib import colormaps

    t = 0.5 if high <= low else min(max((value - low) / (high - low), 0.0), 1.0)
    r, g, b, _ = colormaps["viridis"](t)
    text = "#000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "#fff"
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}", text


def heatmap(
    models: Mapping[str, tuple[TaskResult, DecodingResult]],
    metric: str,
    template_order: Sequence[str],
) -> str:
    """Models × templates, coloured by the metric; the fallback rate under each score."""
    low, high = (-1.0, 1.0) if metric in SIGNED_METRICS else (0.0, 1.0)
    values = [
        float(v)
        for _, dec in models.values()
        for tr in dec.templates.values()
        if (v := tr.metrics.get(metric)) is not None
    ]
    if values and (min(values) < low or max(values) > high):  # e.g. a score on 0-100
        low, high = min(values), max(values)
    header = ["model", *(esc(t) for t in template_order), "mean", "std"]
    rows = []
    for model, (_, dec) in models.items():
        cells = [f'<span class="model">{esc(model)}</span>']
        for template in template_order:
            tr = dec.templates.get(template)
            value = tr.metrics.get(metric) if tr else None
            if tr is None or value is None:
                cells.append('<span class="na">–</span>')
                continue
            bg, fg = _colour(float(value), low, high)
            fallback = (
                f'<small class="fb">fb {pct(tr.fallback_rate)}</small>'
                if tr.fallback_rate > 0 and tr.n > 0
                else ""
            )
            cells.append(
                f'<span class="cell" style="background:{bg};color:{fg}">'
                f"{num(value, 2)}{fallback}</span>"
            )
        s = dec.aggregate.get(metric)
        cells += [num(s.mean if s else None), num(s.std if s else None)]
        rows.append(cells)
    caption = (
        f"{esc(metric)} per template (colour: {num(low, 1)} → {num(high, 1)}, viridis); "
        "“fb” = share of outputs where the answer regex did not match and the task's "
        "fallback answer was used"
    )
    return table(header, rows, cls="heatmap", caption=caption, numeric_from=1)


VERDICT_MARKS: dict[Verdict, str] = {"a_better": " ◀ A", "b_better": " B ▶", "inconclusive": ""}


def _difference(stat: PairedStatistic) -> str:
    mark = esc(VERDICT_MARKS[stat.verdict])
    p_text = f' <span class="ci">p={num(stat.p_value, 3)}</span>'
    return f"{num(stat.diff)} {ci(stat.ci_low, stat.ci_high)}<b>{mark}</b>{p_text}"


def paired_differences(rows: Sequence[PairedComparison]) -> str:
    """Model A − model B on the same replicates of templates and instances, as results.json
    records it (`paired[TASK][DECODING]`): the difference of the means and of the Sharpe
    scores with their CIs; ◀ A / B ▶ where the interval excludes 0."""
    header = ["model A", "model B", "Δ mean [95% CI]", "Δ Sharpe [95% CI]", "CI method"]
    body = [
        [
            f'<span class="model">{esc(r.model_a)}</span>',
            f'<span class="model">{esc(r.model_b)}</span>',
            _difference(r.mean),
            _difference(r.sharpe),
            esc(r.ci_method),
        ]
        for r in rows
    ]
    return table(header, body, cls="paired", numeric_from=2)


def model_groups(groups: ModelGroups) -> str:
    """Which models differ after the multiple-comparison correction, and the groups of
    statistically tied models (`model_groups[TASK][DECODING][METRIC]`)."""
    verdicts = {"a_better": "◀ A", "b_better": "B ▶", "tied": "tied"}
    body = [
        [
            f'<span class="model">{esc(t.model_a)}</span>',
            f'<span class="model">{esc(t.model_b)}</span>',
            num(t.diff) + " " + ci(t.simultaneous_ci_low, t.simultaneous_ci_high),
            num(t.p_value, 3),
            num(t.p_adjusted, 3),
            esc(verdicts[t.verdict]),
        ]
        for t in groups.tests
    ]
    header = ["model A", "model B", "Δ Sharpe [simultaneous CI]", "p", "p adjusted", "verdict"]
    tied = " · ".join(
        "{" + ", ".join(f'<span class="model">{esc(m)}</span>' for m in g) + "}"
        for g in groups.groups
    )
    estimated = " (≈ estimated from part of the grid)" if groups.estimated else ""
    note = (
        f'<p class="note">Statistically tied groups, best first{estimated}: {tied}. Every '
        f"pair at a family-wise level of {esc(groups.level)} ({esc(groups.correction)}); "
        "models in no common group differ.</p>"
    )
    return note + table(header, body, cls="groups", numeric_from=2)


def space_tables(label: str, dec: DecodingResult, metric: str) -> str:
    """One model's prompt space on one metric: each dimension's effect and each level's
    mean, with their intervals (the rows the text reports show; every cell escaped:
    level names come from task files)."""
    out = []
    for section in space_sections(dec):
        if section.metric != metric:
            continue
        for header, rows, numeric_from, what in (
            (SPACE_HEADER, section.dimensions, 1, "what each dimension does"),
            (LEVEL_HEADER, section.levels, 2, "each level's mean"),
        ):
            out.append(
                table(
                    [esc(h) for h in header],
                    ([esc(cell) for cell in row] for row in rows),
                    cls="space",
                    caption=f"{esc(label)} · {esc(what)}",
                    numeric_from=numeric_from,
                )
            )
    return "".join(out)

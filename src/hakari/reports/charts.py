"""The report's figures: matplotlib drawn to inline SVG, text kept as text.

`svg.fonttype="none"` leaves labels as `<text>` elements, so the browser draws them with
the page's font stack (CJK included) and readers can select and search them; matplotlib
escapes the text it writes. Output is deterministic: a fixed `svg.hashsalt` per figure,
no date or creator metadata, no network. Figures are `Figure` objects, never pyplot,
so no GUI backend is touched and nothing global leaks between figures. Element ids are prefixed per
figure so that many SVGs in one page never share a clip path.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import matplotlib as mpl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from hakari.results.sweep import AlphaSweepPoint

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from hakari.reports.views import TemplatePanel, TemplateSeries


def _installed_fonts() -> list[str]:
    """DejaVu (matplotlib's own) plus Noto CJK where installed, so that matplotlib measures
    Japanese labels; the page's CSS font stack draws them (see `_clean_svg`)."""
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    return ["DejaVu Sans", *(n for n in ("Noto Sans CJK JP",) if n in names)]


FONT_STACK = _installed_fonts()
# Okabe–Ito: distinguishable for colour-blind readers, prints in greyscale with markers.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]

_RC: Any = {  # typed Any: matplotlib types rc keys as one long Literal
    "svg.fonttype": "none",
    "font.family": FONT_STACK,
    "font.size": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 9,
    "axes.titleweight": "bold",
    "axes.labelsize": 8,
    "legend.fontsize": 7,
    "legend.frameon": False,
}


def plain(text: str) -> str:
    """A label matplotlib must not read as mathtext ($...$)."""
    return text.replace("$", r"\$")


def _svg(fig: Figure, key: str) -> str:
    buf = io.StringIO()
    rc: Any = {**_RC, "svg.hashsalt": key}
    with mpl.rc_context(rc):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return _clean_svg(buf.getvalue(), re.sub(r"[^A-Za-z0-9]", "", key)[-24:] or "f")


def _clean_svg(svg: str, prefix: str) -> str:
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    referenced = set(re.findall(r'(?:href="#|url\(#)([^")]+)', svg))

    def fix_id(m: re.Match[str]) -> str:
        return f' id="{prefix}-{m.group(1)}"' if m.group(1) in referenced else ""

    svg = re.sub(r' id="([^"]+)"', fix_id, svg)
    svg = re.sub(r'(href="#|url\(#)', rf"\g<1>{prefix}-", svg)
    svg = re.sub(r"font-family: [^;\"]*;? ?", "", svg)  # the page's font stack applies
    svg = re.sub(r"(\d+\.\d\d)\d+", r"\1", svg)  # coordinates to 1/100 pt
    svg = re.sub(r" \n\s*", " ", svg)
    svg = re.sub(r">\s+<", "><", svg)
    return svg.replace("<svg ", '<svg class="chart" role="img" ', 1)


def _figure(width: float, height: float, constrained: bool = True) -> Figure:
    with mpl.rc_context(_RC):
        return Figure(figsize=(width, height), layout="constrained" if constrained else None)


def _legend_width(labels: Sequence[str], fontsize: float = 7.0) -> float:
    """Inches a legend of these labels needs (CJK glyphs are about twice as wide)."""
    widest = max((sum(2 if ord(ch) > 0x2E80 else 1 for ch in s) for s in labels), default=4)
    return 0.45 + min(widest, 40) * fontsize * 0.55 / 72


def bump_chart(
    panels: Sequence[tuple[str, Sequence[AlphaSweepPoint]]],
    key: str,
    all_models: Sequence[str] = (),
) -> str:
    """Rank of each model against alpha, one panel per metric (seed 000, Figures 3 and 5).

    `panels`: (title, sweep) with the points `aggregate.alpha_sweep` makes. Rank 1 is at
    the top; the models' Sharpe scores at
    Tied models share a rank. `all_models` fixes each model's colour and marker for the
    whole page.
    """
    n = len(panels)
    models = list(all_models) or (list(panels[0][1][0].ranking) if panels else [])
    shown = list(dict.fromkeys(m for _, sweep in panels for m in sweep[0].ranking))
    # Fixed margins instead of constrained layout: a third of the drawing time.
    panel_w, legend_w = 2.9, _legend_width(shown)
    width = n * panel_w + legend_w
    height = 1.0 + 0.3 * max(len(models), 2)
    with mpl.rc_context(_RC):
        fig = _figure(width, height, constrained=False)
        fig.subplots_adjust(
            left=0.5 / width,
            right=1 - (legend_w + 0.05) / width,
            bottom=0.5 / height,
            top=1 - 0.3 / height,
            wspace=0.35,
        )
        axes = fig.subplots(1, n, squeeze=False)[0]
        for ax, (title, sweep) in zip(axes, panels, strict=True):
            alphas = [p.alpha for p in sweep]
            order = list(sweep[0].ranking)
            for model in shown:
                if model not in order:
                    continue
                ranks = [_rank(p.scores, model) for p in sweep]
                colour, marker = _model_style(model, models, len(models) + order.index(model))
                ax.plot(
                    alphas,
                    ranks,
                    color=colour,
                    marker=marker,
                    ms=3,
                    lw=1.4,
                    alpha=0.9,
                    label=plain(model),
                )
            ax.set_ylim(len(order) + 0.5, 0.5)
            ax.set_yticks(range(1, len(order) + 1))
            ax.set_xticks([0, 0.5, 1, 1.5, 2] if max(alphas) <= 2 else ax.get_xticks())
            ax.set_xlim(min(alphas) - 0.05, max(alphas) + 0.05)
            ax.set_xlabel("α")
            ax.set_ylabel("rank")
            ax.set_title(plain(title), loc="left")
            ax.grid(axis="x", color="#dddddd", lw=0.5)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1 - legend_w / width, 0.5))
        return _svg(fig, key)


def _model_style(model: str, all_models: Sequence[str], fallback: int) -> tuple[str, str]:
    """The colour and marker a model has everywhere on the page."""
    i = list(all_models).index(model) if model in all_models else fallback
    return PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]


_MAX_WIDTH = 9.0  # inches: wider panels go one under the other
_TICK_CHARS = 16  # longer template ids (never from a task file) are shortened on the axis


def template_chart(
    panels: Sequence[TemplatePanel], key: str, all_models: Sequence[str] = ()
) -> str:
    """Each template's score with its interval, models side by side, one panel per
    metric: the figure a reader of seed 000 looks for. Each model's mean across
    templates is a solid line and its Sharpe score a dashed one, in the model's colour
    (the gap between them is what the template spread costs); the chance rate is dotted.
    Templates without an interval show the point only."""
    templates = panels[0].templates
    models = list(dict.fromkeys(s.model for p in panels for s in p.series))
    ticks = [_short(plain(t)) for t in templates]
    rotate = any(len(t) > 5 for t in ticks)
    legend = [*models, "mean", "Sharpe score (α as run)", "chance"]
    legend_w = _legend_width(legend)
    per_template = 0.22 * (1 + 0.4 * (len(models) - 1))
    panel_w = min(max(2.6, 0.8 + per_template * len(templates)), _MAX_WIDTH)
    cols = len(panels) if len(panels) * panel_w <= _MAX_WIDTH else 1
    rows = math.ceil(len(panels) / cols)
    bottom = 0.35 + (0.07 * max(len(t) for t in ticks) if rotate else 0.15)
    row_h = 1.9 + bottom
    width, height = cols * panel_w + legend_w, rows * row_h + 0.1
    with mpl.rc_context(_RC):
        fig = _figure(width, height, constrained=False)
        fig.subplots_adjust(
            left=0.55 / width,
            right=1 - (legend_w + 0.05) / width,
            bottom=bottom / height,
            top=1 - 0.3 / height,
            wspace=0.3,
            hspace=(bottom + 0.35) / 1.9,
        )
        axes = fig.subplots(rows, cols, squeeze=False).ravel()
        for ax, panel in zip(axes, panels, strict=False):
            _template_panel(ax, panel, ticks, rotate, models, all_models)
        for ax in axes[len(panels) :]:
            ax.set_visible(False)
        handles = [
            Line2D([], [], ls="none", color=c, marker=m, ms=4, label=plain(model))
            for model in models
            for c, m in [_model_style(model, all_models, models.index(model))]
        ] + [
            Line2D([], [], color="#444444", lw=1.0, ls="-", label="mean"),
            Line2D([], [], color="#444444", lw=1.0, ls="--", label=_sharpe_label(panels)),
            Line2D([], [], color="#888888", lw=0.9, ls=":", label="chance"),
        ]
        fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1 - legend_w / width, 0.5))
        return _svg(fig, key)


def _short(text: str) -> str:
    return text if len(text) <= _TICK_CHARS else text[: _TICK_CHARS - 1] + "…"


def _sharpe_label(panels: Sequence[TemplatePanel]) -> str:
    alphas = {s.alpha for p in panels for s in p.series if s.alpha is not None}
    return f"Sharpe score (α = {alphas.pop():g})" if len(alphas) == 1 else "Sharpe score (α as run)"


def _template_panel(
    ax: Axes,
    panel: TemplatePanel,
    ticks: Sequence[str],
    rotate: bool,
    models: Sequence[str],
    all_models: Sequence[str],
) -> None:
    n = len(panel.templates)
    step = min(0.7 / max(len(models), 1), 0.22)
    values: list[float] = []
    for series in panel.series:
        j = models.index(series.model)
        colour, marker = _model_style(series.model, all_models, j)
        offset = (j - (len(models) - 1) / 2) * step
        _draw_series(ax, series, offset, colour, marker)
        values += [v for v in (*series.scores, *series.lows, *series.highs) if v is not None]
        for level, style in ((series.mean, "-"), (series.sharpe, "--")):
            if level is not None:
                ax.plot([-0.5, n - 0.5], [level, level], color=colour, lw=1.0, ls=style, alpha=0.85)
                values.append(level)
    if panel.chance is not None:
        ax.plot([-0.5, n - 0.5], [panel.chance] * 2, color="#888888", lw=0.9, ls=":")
        values.append(panel.chance)
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    pad = max(0.04 * (high - low), 0.02)
    ax.set_ylim(low - pad, high + pad)
    ax.set_xlim(-0.5, n - 0.5)
    # template ids as plain texts under the axis: matplotlib's ticks (three lines and two
    # texts each) were half the drawing time of a chart with 18 templates
    ax.set_xticks([])
    below = ax.get_xaxis_transform()
    for x, tick in enumerate(ticks):
        ax.text(x, -0.03, tick, transform=below, fontsize=7, ha="center", va="top",
                rotation=90 if rotate else 0)  # fmt: skip
    ax.set_xlabel("template", labelpad=(4 + 4.2 * max(map(len, ticks))) if rotate else 14)
    ax.set_ylabel(plain(panel.metric))
    ax.set_title(plain(panel.metric), loc="left")
    ax.grid(axis="y", color="#eeeeee", lw=0.5)


def _draw_series(ax: Axes, series: TemplateSeries, offset: float, colour: str, marker: str) -> None:
    """The points and their intervals: one path for all the intervals (NaN breaks it)."""
    nan = float("nan")
    xs: list[float] = []
    ys: list[float] = []
    bar_x: list[float] = []
    bar_y: list[float] = []
    for i, (score, low, high) in enumerate(
        zip(series.scores, series.lows, series.highs, strict=True)
    ):
        if score is None:
            continue
        xs.append(i + offset)
        ys.append(score)
        if low is not None and high is not None:
            bar_x += [i + offset, i + offset, nan]
            bar_y += [low, high, nan]
    if bar_x:
        ax.plot(bar_x, bar_y, color=colour, lw=1.1, alpha=0.75)
    ax.plot(xs, ys, ls="none", color=colour, marker=marker, ms=3.6, zorder=3)


def _rank(scores: Mapping[str, float], model: str) -> int:
    """Competition rank (1, 2, 2, 4): tied models are drawn on the same rank."""
    return 1 + sum(1 for v in scores.values() if v > scores[model])


def fth_scatter(points: Sequence[Mapping[str, Any]], key: str) -> str:
    """pfgen-bench's three views (seed 001, Figures 1–3): fluency vs truthfulness, fluency
    vs helpfulness, truthfulness vs helpfulness. Each point is labelled with its rank in
    the leaderboard table (a legend of a hundred models would be unreadable)."""
    pairs = [
        ("fluency", "truthfulness"),
        ("fluency", "helpfulness"),
        ("truthfulness", "helpfulness"),
    ]
    with mpl.rc_context(_RC):
        fig = _figure(7.4, 2.7, constrained=False)
        fig.subplots_adjust(left=0.07, right=0.99, bottom=0.17, top=0.95, wspace=0.3)
        axes = fig.subplots(1, 3)
        for ax, (x, y) in zip(axes, pairs, strict=True):
            xs = [float(p[x]) for p in points]
            ys = [float(p[y]) for p in points]
            ax.scatter(xs, ys, s=14, color=PALETTE[0], alpha=0.75, zorder=3, linewidths=0)
            if len(points) <= 40:
                for rank, (px, py) in enumerate(zip(xs, ys, strict=True), start=1):
                    ax.annotate(str(rank), (px, py), xytext=(2.5, 2), textcoords="offset points",
                                fontsize=6, color="#333333")  # fmt: skip
            ax.set_xlabel(x.capitalize())
            ax.set_ylabel(y.capitalize())
            # fluency is scaled so that the reference answers average 1.0: it can pass 1
            ax.set_xlim(0, max([1.02, *(v + 0.03 for v in xs)]))
            ax.set_ylim(0, max([1.02, *(v + 0.03 for v in ys)]))
            ax.grid(color="#eeeeee", lw=0.5)
        return _svg(fig, key)


def ci_forest(
    labels: Sequence[str],
    values: Sequence[float],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    xlabel: str,
    key: str,
) -> str:
    """One row per entry: the point and its CI (rows without a CI show the point only)."""
    n = len(labels)
    height = 0.6 + 0.16 * n
    label_w = _legend_width(labels) + 0.2
    with mpl.rc_context(_RC):
        fig = _figure(6.4, height, constrained=False)
        fig.subplots_adjust(
            left=label_w / 6.4, right=0.97, bottom=0.45 / height, top=1 - 0.1 / height
        )
        ax = fig.subplots()
        ys = list(range(n))
        for y, lo, hi in zip(ys, lows, highs, strict=True):
            if lo is not None and hi is not None:
                ax.plot([lo, hi], [y, y], color=PALETTE[0], lw=1.2)
        ax.scatter(values, ys, s=10, color=PALETTE[0], zorder=3)
        ax.set_yticks(ys, [plain(s) for s in labels], fontsize=6.5)
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", color="#eeeeee", lw=0.5)
        return _svg(fig, key)


def correlation_heatmap(
    names: Sequence[str], matrix: Sequence[Sequence[float | None]], title: str, key: str
) -> str:
    """A symmetric metric × metric (or metric × human) correlation matrix, annotated
    (seed 003, Figure 1). Cells without a value stay blank."""
    import numpy as np

    values = np.array(
        [[np.nan if v is None else float(v) for v in row] for row in matrix], dtype=float
    )
    size = 1.6 + 0.42 * len(names)
    with mpl.rc_context(_RC):
        fig = _figure(size + 0.8, size)
        ax = fig.subplots()
        image = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1)
        ax.set_xticks(range(len(names)), [plain(n) for n in names], rotation=45, ha="right")
        ax.set_yticks(range(len(names)), [plain(n) for n in names])
        for r in range(values.shape[0]):
            for c in range(values.shape[1]):
                if not np.isnan(values[r, c]):
                    colour = "white" if abs(values[r, c]) > 0.6 else "black"
                    ax.text(
                        c,
                        r,
                        f"{values[r, c]:.2f}",
                        ha="center",
                        va="center",
                        fontsize=6.5,
                        color=colour,
                    )
        ax.set_title(plain(title), loc="left")
        for side in ("top", "right"):
            ax.spines[side].set_visible(True)
        fig.colorbar(image, ax=ax, shrink=0.8)
        return _svg(fig, key)

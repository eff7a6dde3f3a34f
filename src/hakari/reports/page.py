"""One self-contained HTML page for one or more runs: header (command, versions, data),
an overview, then per task × decoding the per-template chart and per metric the
leaderboard, the per-template heatmap, a prompt space's percentiles and one chart per
dimension, and paired differences, then the alpha-sweep bump
chart; the sample browser per task, and the meta-evaluation sections when meta files are
given.

Self-contained means: no script, no external stylesheet, font or image; the figures are
inline SVG. Sections whose data a results.json does not have are left out, so results
written by older hakari versions still render.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hakari.reports import charts, tables
from hakari.reports.inputs import ReportData, Run, SampleBlock, read_samples
from hakari.reports.leaderboards import LeaderboardSection, leaderboard_sections
from hakari.reports.markup import anchor, definition_list, esc, num, table
from hakari.reports.meta import meta_sections
from hakari.reports.rows import SPACE_NOTE, run_notes
from hakari.reports.samples import filter_css, sample_browser
from hakari.reports.style import CSS
from hakari.reports.verdict import decided, verdict_lines
from hakari.reports.views import (
    PerModel,
    dimension_panels,
    labelled_results,
    per_model,
    run_command,
    sweep_panels,
    template_panels,
)
from hakari.results import EvalResults, RunConfig, TaskResult
from hakari.results.paired import ModelGroups, PairedComparison

SHOWN_ELSEWHERE = {"models", "tasks", "decodings", "task_files", "command", "argv"}


VLLM_SETTINGS = frozenset(
    {"tensor_parallel_size", "data_parallel_size", "distributed_executor_backend",
     "gpu_memory_utilization", "max_model_len", "enforce_eager", "engine_args"}
)  # fmt: skip


def serving_settings(config: RunConfig) -> dict[str, Any]:
    """The serving options that applied to the run's models: the client's for openai:
    specs, the engine's for vllm: specs, none for in-process and fake models."""
    models = [str(m) for m in config.models or []]
    served = any(m.startswith("openai:") for m in models)
    in_vllm = any(m.startswith("vllm:") for m in models)
    return {
        key: value
        for key, value in (config.serving or {}).items()
        if (in_vllm if key in VLLM_SETTINGS else served) and value not in (None, [], ())
    }


def _settings(config: RunConfig, ci_methods: Sequence[str]) -> dict[str, Any]:
    """Task files, then every other setting the run recorded that applied to it (new
    fields included; the serving options only for served models, empty values left out)."""
    data: dict[str, Any] = {}
    for task, path in (config.task_files or {}).items():
        data[f"task {task}"] = path
    for key, value in config.recorded().items():
        if key == "serving":
            value = serving_settings(config)
        if key in SHOWN_ELSEWHERE or value in ("", [], {}):
            continue
        data[key] = (
            json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value
        )
    if ci_methods:
        data["CI method"] = ", ".join(ci_methods)
    return data


def _models_table(run: Run) -> str:
    """One row per model: its label in the report and its identity (backend, revision…)."""
    models = run.results.models
    keys = list(dict.fromkeys(k for m in models.values() for k in m.identity))
    rows = [
        [f'<span class="model">{esc(run.labels[key])}</span>']
        + [f"<code>{esc(m.identity.get(k, ''))}</code>" for k in keys]
        for key, m in models.items()
    ]
    return table(["model", *(esc(k) for k in keys)], rows, cls="identity", numeric_from=99)


def _run_header(run: Run, number: int, total: int) -> str:
    r = run.results
    command, recorded = run_command(r.config)
    how = "" if recorded else ' <span class="note">(rebuilt from the run\'s config)</span>'
    ci_methods = sorted(
        {
            s.ci_method
            for m in r.models.values()
            for t in m.tasks.values()
            for d in t.decodings.values()
            for s in d.aggregate.values()
            if s.ci_method
        }
    )
    title = f"Run {number} of {total}: " if total > 1 else ""
    return (
        f'<section class="run"><h3>{esc(title)}<code>{esc(run.source)}</code></h3>'
        f"<p>command{how}</p><pre class=cmd>{esc(command)}</pre>"
        f"<h4>models</h4>{_models_table(run)}"
        '<details class="settings"><summary>data, settings and versions</summary>'
        '<div class="cols"><div><h4>data and settings</h4>'
        f"{definition_list(_settings(r.config, ci_methods))}</div>"
        f"<div><h4>versions</h4>{definition_list(r.versions)}</div></div></details></section>"
    )


def _task_info(data: ReportData, task: str) -> TaskResult:
    return next(m.tasks[task] for m in data.models.values() if task in m.tasks)


def _template_order(models: PerModel) -> list[str]:
    seen: dict[str, None] = {}
    for _, dec in models.values():
        seen.update(dict.fromkeys(dec.templates))
    return list(seen)


def _verdict(results: EvalResults) -> str:
    """The verdict paragraph and the warnings (`reports.verdict`), as `hakari run` ends."""
    lines = verdict_lines(results)
    if not lines:
        return ""
    said = [line for line in lines if not line.startswith("warning: ")]
    warned = [line.removeprefix("warning: ") for line in lines if line.startswith("warning: ")]
    items = "".join(f"<li>{esc(w)}</li>" for w in warned)
    return (
        '<div class="overall">'
        + "".join(f"<p><b>{esc(line)}</b></p>" for line in said)
        + (f'<ul class="warnings">{items}</ul>' if items else "")
        + "</div>"
    )


def _overview(data: ReportData, results: EvalResults) -> str:
    """Per decoding: models × tasks, the Sharpe score of each task's first metric; bold
    where the paired tests find the model better than every other one."""
    parts = []
    decodings: dict[str, None] = {}
    for task in data.tasks:
        decodings.update(dict.fromkeys(data.decodings(task)))
    for decoding in decodings:
        tasks = [t for t in data.tasks if per_model(data, t, decoding)]
        if not tasks:
            continue
        header = ["model"] + [
            f'<a href="#{anchor(t)}">{esc(t)}</a><br>'
            f"<small>{esc(_task_info(data, t).metrics[0])}</small>"
            for t in tasks
        ]
        rows = []
        for label in data.models:
            row = [f'<span class="model">{esc(label)}</span>']
            for t in tasks:
                pm = per_model(data, t, decoding)
                if label not in pm:
                    row.append("–")
                    continue
                metric = pm[label][0].metrics[0]
                s = pm[label][1].aggregate.get(metric)
                cell = decided(results, t, decoding, metric)
                mark = " best" if cell is not None and cell.winner() == label else ""
                sharpe, mean, std = (s.sharpe, s.mean, s.std) if s is not None else (None,) * 3
                row.append(
                    f'<span class="ov{mark}">{num(sharpe)}</span>'
                    f'<small class="sub">mean {num(mean)} ± {num(std)}</small>'
                )
            rows.append(row)
        parts.append(
            table(
                header,
                rows,
                cls="overview",
                caption=f"{esc(decoding)} decoding: Sharpe score (α as run) of each task's "
                "first metric; mean ± std across templates below; bold: better than every "
                "other model (paired test, 95%)",
            )
        )
    return "".join(parts)


def _leaderboard_view(section: LeaderboardSection) -> str:
    """A family's leaderboard view (`reports.leaderboards`), one table."""
    rows = [[esc(cell) for cell in row] for row in section.rows]
    caption = f"{esc(section.title)}. {esc(section.note)}"
    return table(
        [esc(h) for h in section.header],
        rows,
        cls="leaderboard-view",
        caption=caption,
        numeric_from=2,
    )


def _comparisons(
    results: EvalResults, task: str, decoding: str, metric: str
) -> tuple[list[PairedComparison], ModelGroups | None]:
    """The paired comparisons and the model groups of one cell (report labels)."""
    paired = [
        c for c in (results.paired or {}).get(task, {}).get(decoding, []) if c.metric == metric
    ]
    groups = (results.model_groups or {}).get(task, {}).get(decoding, {}).get(metric)
    return paired, groups


def _template_figure(
    data: ReportData, models: PerModel, metrics: Sequence[str], templates: list[str], key: str
) -> str:
    panels = template_panels(models, metrics, templates)
    if not panels:
        return ""
    svg = charts.template_chart(panels, key=f"{key}t", all_models=list(data.models))
    intervals = any(low is not None for p in panels for s in p.series for low in s.lows)
    levels = {
        a.confidence for _, dec in models.values() for a in dec.aggregate.values() if a.confidence
    }
    level = f"{levels.pop():.0%} " if len(levels) == 1 else ""
    how = (
        f"bars: {level}bootstrap interval of each template's score over the instances"
        if intervals
        else "no per-template intervals recorded (a run without bootstrap, or by an older "
        "hakari: run the same command again, the answers come from the cache)"
    )
    return (
        '<figure class="templates">'
        f"{svg}<figcaption>Score of every template ({how}); in each model's colour, "
        "solid line: its mean across templates, dashed: its Sharpe score; dotted: chance. "
        "The farther the dashed line lies from the solid one, the more the score depends "
        "on the template (Sakai et al., 2024).</figcaption></figure>"
    )


def _space_figures(data: ReportData, models: PerModel, metric: str, key: str) -> str:
    """A prompt space's percentiles, its dimension and level tables per model and one
    chart per dimension (none without a space)."""
    panels = dimension_panels(models, metric)
    if not panels:
        return ""
    lines, space_tables = [], []
    for label, (_, dec) in models.items():
        space = (dec.space or {}).get(metric)
        if space is not None:
            cells = ", ".join(
                f"p{p.q:g} {p.value:.3f}"
                + (f" [{p.ci_low:.3f}, {p.ci_high:.3f}]" if p.ci_low is not None else "")
                for p in space.percentiles
            )
            mark = " (≈ estimated from part of the grid)" if space.estimated else ""
            lines.append(f"<li>{esc(label)}{mark}: {esc(cells)}</li>")
            space_tables.append(tables.space_tables(label, dec, metric))
    figures = [
        '<figure class="dimension">'
        + charts.dimension_chart(panel, key=f"{key}d{i}", all_models=list(data.models))
        + "</figure>"
        for i, panel in enumerate(panels)
    ]
    return (
        "<h5>what each dimension of the prompt space does</h5>"
        f"<p>Template scores' percentiles (95% intervals):</p><ul>{''.join(lines)}</ul>"
        + "".join(space_tables)
        + "".join(figures)
        + f'<p class="note">{esc(SPACE_NOTE)} Dots: each template\'s score at the level; '
        "bars: the level's mean.</p>"
    )


def _decoding_section(
    data: ReportData, results: EvalResults, task: str, decoding: str, n: int
) -> str:
    models = per_model(data, task, decoding)
    head = f'<h3 id="{anchor(task, decoding)}">{esc(task)} · {esc(decoding)}</h3>'
    if not models:
        reasons = {
            m.tasks[task].decodings[decoding].skipped
            for m in data.models.values()
            if task in m.tasks and decoding in m.tasks[task].decodings
        } - {None}
        why = "; ".join(esc(r) for r in reasons if r) or "no results"
        return f'<section class="decoding">{head}<p class="note">skipped: {why}</p></section>'
    info = _task_info(data, task)
    templates = _template_order(models)
    parts = [
        head,
        _template_figure(data, models, info.metrics, templates, anchor(task, decoding, n)),
    ]
    for metric in info.metrics:
        parts.append(f'<h4 id="{anchor(task, decoding, metric)}">{esc(metric)}</h4>')
        parts.append(tables.leaderboard(models, metric, decided(results, task, decoding, metric)))
        parts.append(tables.heatmap(models, metric, templates))
        parts.append(_space_figures(data, models, metric, anchor(task, decoding, metric, n)))
        paired, groups = _comparisons(results, task, decoding, metric)
        if paired:
            parts.append("<h5>paired differences (same templates and instances)</h5>")
            parts.append(tables.paired_differences(paired))
        if groups is not None:
            parts.append("<h5>which models differ (corrected for the number of pairs)</h5>")
            parts.append(tables.model_groups(groups))
    panels = sweep_panels(models, info.metrics)
    if panels:
        svg = charts.bump_chart(panels, key=anchor(task, decoding, n), all_models=list(data.models))
        parts.append(
            '<figure class="bump">'
            f"{svg}<figcaption>Rank by Sharpe score as α goes from 0 (the mean) to 2 "
            "(std weighs twice): lines that cross are models whose order depends on how "
            "much template variance is penalised (Sakai et al., 2024, Figures 3 and 5)."
            "</figcaption></figure>"
        )
    return f'<section class="decoding">{"".join(parts)}</section>'


def _task_section(
    data: ReportData,
    results: EvalResults,
    task: str,
    samples: Sequence[SampleBlock],
    per_template: int,
    n: int,
) -> str:
    info = _task_info(data, task)
    decodings = data.decodings(task)
    templates: dict[str, None] = {}
    for d in decodings:
        templates.update(dict.fromkeys(_template_order(per_model(data, task, d))))
    summary = (
        f"{esc(info.language)} · {esc(info.n_instances)} instances · "
        f"{len(templates)} templates · metrics: {esc(', '.join(info.metrics))}"
    )
    body = [
        _decoding_section(data, results, task, decoding, n * 10 + i)
        for i, decoding in enumerate(decodings)
    ]
    if samples:
        box = anchor(task, "samples")
        body.append(
            f'<details class="samples" id="{box}-d"><summary>{esc(task)} · samples: '
            f"{len(samples)} prompts, every model's answer</summary>"
            f"{sample_browser(box, samples, list(templates), per_template)}</details>"
        )
    return (
        f'<section class="task" id="{anchor(task)}"><h2>{esc(task)}</h2>'
        f'<p class="meta">{summary}</p>{"".join(body)}</section>'
    )


def build_html(
    data: ReportData, *, samples_per_template: int = 3, title: str = "hakari report"
) -> str:
    samples = read_samples(data, samples_per_template)
    max_templates = max(
        [len(_template_order(per_model(data, t, d))) for t in data.tasks for d in data.decodings(t)]
        + [0]
    )
    nav = "".join(f'<a href="#{anchor(t)}">{esc(t)}</a>' for t in data.tasks)
    if data.meta:
        nav += '<a href="#meta">meta-evaluation</a>'
    runs = "".join(_run_header(run, i + 1, len(data.runs)) for i, run in enumerate(data.runs))
    results = labelled_results(data) if data.runs else None
    tasks = "".join(
        _task_section(data, results, t, samples.get(t, []), samples_per_template, i)
        for i, t in enumerate(data.tasks)
        if results is not None
    )
    overview = _overview(data, results) if results is not None else ""
    if results is not None:
        overview += "".join(map(_leaderboard_view, leaderboard_sections(results)))
    imported = [n for run in data.runs for n in run_notes(run.results)]
    notes = "".join(f"<p class=note>{esc(note)}</p>" for note in [*data.notes, *imported])
    sections = [
        f'<header class="top"><h1>{esc(title)}</h1>'
        f'<p class="meta">{len(data.models)} models · {len(data.tasks)} tasks · '
        f"{len(data.runs)} run(s)</p>{notes}<nav>{nav}</nav></header>",
        f'<section id="overview"><h2>Overview</h2>{_verdict(results)}{overview}'
        f"{_reading_guide()}</section>"
        if overview and results is not None
        else "",
        tasks,
        meta_sections(data.meta),
        f'<section id="runs"><h2>How these results were made</h2>{runs}</section>'
        if data.runs
        else "",
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}\n{filter_css(max_templates)}</style></head>"
        f"<body>{''.join(sections)}<footer>made by hakari · self-contained: no scripts, no "
        "external resources</footer></body></html>"
    )


def _reading_guide() -> str:
    return (
        '<details class="guide"><summary>How to read this report</summary><ul>'
        "<li><b>mean, std</b>: across templates; std is the population std (ddof = 0).</li>"
        "<li><b>Sharpe score</b> = mean / (α·std + 1) (Sakai et al., 2024): a model whose "
        "score depends less on the template wording ranks higher as α grows.</li>"
        "<li><b>95% CI</b>: bootstrap over templates and instances jointly, so it covers "
        "both prompt and sampling variance.</li>"
        "<li><b>rank</b>: a model ranks above another only where the paired test of the "
        "Sharpe scores finds it better (95%), tied otherwise; hover a rank for the order of "
        "the point estimates, by Sharpe score and by mean.</li>"
        "<li><b>chance</b> (the paper's): the score of always giving the task's fallback "
        "answer on the same instances, i.e. of a model whose every output fails to parse; "
        "<b>uniform guess</b>: the expected score of a random choice (the mean of 1/k, k each "
        "instance's number of choices); <b>majority "
        "answer</b>: always the most common gold label; <b>fallback</b>: share of outputs "
        "the answer regex did not match.</li>"
        "</ul></details>"
    )

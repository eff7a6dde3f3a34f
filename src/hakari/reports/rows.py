"""The rows both text views of a run show (terminal tables and Markdown): one table per
model × task × decoding (templates, the trivial baselines, mean / std / min / max /
Sharpe with its CI), the summary rows a paper table needs, the paired differences, and
the tables of a meta-evaluation file. Cells are plain strings; each view escapes them its
own way."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from hakari.results import DecodingResult, EvalResults, TaskResult
from hakari.results.paired import ModelGroups, PairedStatistic, Verdict
from hakari.results.space import DimensionEffect
from hakari.results.stats import AggregateStats


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


NEGATIVE_MEAN_MARK = " †"
NEGATIVE_MEAN_NOTE = (
    "† mean < 0: eq. 1 rewards spread here (a larger std brings a negative Sharpe score "
    "closer to 0); compare such models by mean and std, not by Sharpe."
)


def sharpe_text(stats: AggregateStats | None) -> str:
    """The Sharpe score, marked when its aggregate carries the negative-mean caveat."""
    if stats is None:
        return fmt(None)
    mark = NEGATIVE_MEAN_MARK if stats.sharpe_caveat == "negative_mean" else ""
    return fmt(stats.sharpe) + mark


def has_caveat(dec: DecodingResult) -> bool:
    return any(a.sharpe_caveat == "negative_mean" for a in dec.aggregate.values())


def ci_text(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return ""
    return f" [{low:.3f}, {high:.3f}]"


def mean_ci_text(stats: AggregateStats | None) -> str:
    return ci_text(stats.ci_low, stats.ci_high) if stats is not None else ""


def sharpe_ci_text(stats: AggregateStats | None) -> str:
    return ci_text(stats.sharpe_ci_low, stats.sharpe_ci_high) if stats is not None else ""


SPREAD_ROWS: tuple[tuple[str, Callable[[AggregateStats], float]], ...] = (
    ("mean", lambda s: s.mean),
    ("std", lambda s: s.std),
    ("min", lambda s: s.min),
    ("max", lambda s: s.max),
)


ESTIMATED_MARK = "≈"


def estimate_note(dec: DecodingResult) -> str | None:
    """How much of the grid a budgeted decoding ran, in words (None for a full run)."""
    budget = dec.budget
    if budget is None:
        return None
    design, estimator = budget.design, budget.estimator
    return (
        f"{ESTIMATED_MARK} estimated from {design.fraction:.0%} of the grid "
        f"({design.cells_run:,} of {design.grid_size:,} template × instance cells; "
        f"{estimator.name} v{estimator.version}, {estimator.model}; rounds: "
        f"{len(budget.rounds)}, stopped: {budget.stopped}). Intervals target the same "
        "populations as a full run's; n = instances run per template."
    )


def mean_fallback(dec: DecodingResult) -> float | None:
    """The mean fallback rate of the templates that ran (a budgeted run may leave some
    with no cell: they have no rate, not a rate of 0); None when none ran."""
    ran = [t.fallback_rate for t in dec.templates.values() if t.n > 0]
    return sum(ran) / len(ran) if ran else None


def fallback_text(rate: float | None) -> str:
    return "not run" if rate is None else f"{rate:.1%}"


def table_rows(task: TaskResult, dec: DecodingResult) -> Iterator[list[str]]:
    metrics = task.metrics
    mark = ESTIMATED_MARK if dec.budget is not None else ""
    for template_id, tr in dec.templates.items():
        yield [
            template_id,
            *(mark + fmt(tr.metrics.get(m)) for m in metrics),
            fallback_text(tr.fallback_rate if tr.n > 0 else None),
            str(tr.n),
        ]
    for label, values in baseline_rows(task):
        yield [label, *(fmt(values.get(m)) for m in metrics), "", ""]
    stats = [dec.aggregate.get(m) for m in metrics]
    for label, value in SPREAD_ROWS:
        yield [label, *(mark + fmt(value(s) if s is not None else None) for s in stats), "", ""]
    alpha = stats[0].alpha if stats and stats[0] is not None else 1.0
    yield [f"sharpe (α={alpha:g})", *(mark + sharpe_text(s) for s in stats), "", ""]
    if any(s is not None and s.ci_low is not None for s in stats):
        yield ["mean 95% CI", *(mean_ci_text(s).strip() for s in stats), "", ""]
        yield ["sharpe 95% CI", *(sharpe_ci_text(s).strip() for s in stats), "", ""]


BASELINE_LABELS = {
    "uniform_guess": "uniform guess",
    "majority_answer": "majority answer",
    "chance": "chance (fallback only)",
}
BASELINE_NOTE = (
    "Baselines: uniform guess = the expected score of a random choice (the mean of 1/k, k each "
    "instance's number of choices); majority answer = always the most common gold label of "
    'these instances; fallback only = every output unparsed, the paper\'s "chance" rows.'
)


def run_notes(results: EvalResults) -> list[str]:
    """What results.json says its numbers cannot show, one line each, for every view: how
    an imported run was read (a rescaled score range, left-out records, an ambiguous
    pattern...), then every template whose metric is undefined (`undefined_notes`)."""
    record = results.imported
    read = [f"imported from {record.source}: {note}" for note in record.notes] if record else []
    return read + undefined_notes(results)


UNDEFINED_BECAUSE = {
    "constant_predictions": "its answers are one value",
    "constant_references": "the golds are one value",
    "single_instance": "one instance",
    "constant_predictions_in_cells_run": "its answers in the cells run are one value",
    "constant_references_in_cells_run": "the golds of the cells run are one value",
}


COUNTED_TAIL = ", and counted as 0.0 (chance) in the mean and the Sharpe score"
ESTIMATED_TAIL = ", its estimate fills the cells not run from answers without spread"


def undefined_notes(results: EvalResults) -> list[str]:
    """One line per model × task × decoding × metric with templates whose metric is
    undefined (`DecodingResult.undefined`), naming them: counted as 0.0 (chance)."""
    lines = []
    for model, mres in results.models.items():
        for task, tres in mres.tasks.items():
            for decoding, dec in tres.decodings.items():
                for metric, templates in (dec.undefined or {}).items():
                    named = ", ".join(
                        f"template {tid!r} ({UNDEFINED_BECAUSE.get(why, why)})"
                        for tid, why in templates.items()
                    )
                    where = f"{model} · {task} · {decoding}: {metric} is undefined for {named}"
                    lines.append(where + (ESTIMATED_TAIL if dec.budget else COUNTED_TAIL))
    return lines


def baseline_rows(task: TaskResult) -> list[tuple[str, dict[str, float]]]:
    """(label, metric -> score) of each trivial baseline the task has (older files: the
    fallback-only one alone)."""
    found = [(key, getattr(task, key)) for key in BASELINE_LABELS]
    return [(BASELINE_LABELS[key], values) for key, values in found if values]


def best_baseline(task: TaskResult, metric: str) -> tuple[str, float] | None:
    """The highest trivial baseline of a metric, with its label (None when none)."""
    scored = [(label, v[metric]) for label, v in baseline_rows(task) if metric in v]
    return max(scored, key=lambda item: item[1]) if scored else None


def sections(results: EvalResults) -> Iterator[tuple[str, TaskResult, DecodingResult]]:
    for model, mres in results.models.items():
        for task_name, tres in mres.tasks.items():
            for decoding, dec in tres.decodings.items():
                title = f"{model} · {task_name} · {decoding}"
                yield title, tres, dec


PAIRED_HEADER = [
    "A",
    "B",
    "metric",
    "Δ mean (95% CI)",
    "Δ Sharpe (95% CI)",
    "p (Sharpe)",
    "verdict",
]
VERDICT_TEXT: dict[Verdict, str] = {
    "a_better": "A better",
    "b_better": "B better",
    "inconclusive": "inconclusive",
}


def diff_text(stat: PairedStatistic) -> str:
    return f"{stat.diff:+.3f} [{stat.ci_low:+.3f}, {stat.ci_high:+.3f}]"


def paired_rows(results: EvalResults) -> Iterator[tuple[str, str, list[str]]]:
    """(task, decoding, cells) per paired comparison: A − B on the same templates and
    instances; the verdict reads the Sharpe difference's CI."""
    for task_name, per_dec in (results.paired or {}).items():
        for decoding, comparisons in per_dec.items():
            for c in comparisons:
                yield (
                    task_name,
                    decoding,
                    [
                        c.model_a,
                        c.model_b,
                        c.metric,
                        diff_text(c.mean),
                        diff_text(c.sharpe),
                        f"{c.sharpe.p_value:.3f}",
                        VERDICT_TEXT[c.sharpe.verdict],
                    ],
                )


def summary_rows(results: EvalResults) -> Iterator[list[str]]:
    """One row per model × task × decoding × metric: the numbers a paper table needs."""
    for model, mres in results.models.items():
        for task_name, tres in mres.tasks.items():
            for decoding, dec in tres.decodings.items():
                if dec.skipped or not dec.templates:
                    continue
                fallback = mean_fallback(dec)
                mark = ESTIMATED_MARK if dec.budget is not None else ""
                for metric in tres.metrics:
                    a = dec.aggregate.get(metric)
                    yield [
                        model,
                        task_name,
                        decoding,
                        metric,
                        mark + fmt(a.mean if a else None),
                        mark + fmt(a.std if a else None),
                        mark + sharpe_text(a) + sharpe_ci_text(a),
                        fmt(a.min if a else None) + "–" + fmt(a.max if a else None),
                        fmt(tres.uniform_guess.get(metric)),
                        fmt(tres.majority_answer.get(metric)),
                        fmt(tres.chance.get(metric)),
                        fallback_text(fallback),
                    ]


COMPACT_SUMMARY_HEADER = [
    "model",
    "metric",
    "mean",
    "std",
    "Sharpe [95% CI]",
    "min–max",
    "fallback",
]


def summary_by_section(results: EvalResults) -> dict[tuple[str, str], list[list[str]]]:
    """`summary_rows` regrouped for a narrow screen: (task, decoding) -> a row per model ×
    metric (model, metric, mean, std, Sharpe with its CI, min–max, fallback)."""
    out: dict[tuple[str, str], list[list[str]]] = {}
    for row in summary_rows(results):
        model, task_name, decoding, metric, mean, std, sharpe, span = row[:8]
        out.setdefault((task_name, decoding), []).append(
            [model, metric, mean, std, sharpe, span, row[-1]]
        )
    return out


def section_baselines(results: EvalResults, task_name: str) -> list[str]:
    """A line per metric of a task's baselines, as the first model that ran it has them
    (every model of a run evaluates the same instances)."""
    for mres in results.models.values():
        task = mres.tasks.get(task_name)
        if task is None:
            continue
        found = baseline_rows(task)
        return [
            f"  baselines · {metric}: "
            + " · ".join(
                f"{label} {fmt(values[metric])}" for label, values in found if metric in values
            )
            for metric in task.metrics
            if any(metric in values for _, values in found)
        ]
    return []


SUMMARY_HEADER = [
    "model",
    "task",
    "decoding",
    "metric",
    "mean",
    "std",
    "Sharpe (95% CI)",
    "min–max",
    "uniform guess",
    "majority",
    "chance (fallback only)",
    "fallback",
]


META_STATS = ("pearson", "spearman", "kendall")
MetaTable = tuple[str, list[str], list[list[str]]]  # title, header, rows


def _coefficient_text(entry: Any) -> str:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("value"), int | float):
        return "undefined"
    low, high = entry.get("ci_low"), entry.get("ci_high")
    bounds = isinstance(low, int | float) and isinstance(high, int | float)
    return f"{entry['value']:.3f}" + (f" [{low:.3f}, {high:.3f}]" if bounds else "")


def _meta_notes(entry: Mapping[str, Any]) -> str:
    notes = []
    if entry.get("undefined"):
        notes.append(str(entry["undefined"]))
    if entry.get("n_missing"):
        notes.append(f"{entry['n_missing']} NaN rows left out")
    if entry.get("n_undefined_groups"):
        notes.append(f"{entry['n_undefined_groups']} groups undefined")
    return "; ".join(notes)


def meta_tables(meta: Mapping[str, Any]) -> list[MetaTable]:
    """The tables of a `hakari meta --json` file for the text views: one per level (each
    metric's coefficients with their CIs), then IFTEval's CAT / CIT / TFA. The file is user
    data: what is missing or not of the expected kind is left out or shown as undefined."""
    tables: list[MetaTable] = []
    levels = meta.get("levels")
    for level, metrics in levels.items() if isinstance(levels, Mapping) else ():
        if not isinstance(metrics, Mapping) or not metrics:
            continue
        rows = [
            [str(name), *(_coefficient_text(entry.get(s)) for s in META_STATS),
             fmt(entry.get("n")), _meta_notes(entry)]
            for name, entry in metrics.items()
            if isinstance(entry, Mapping)
        ]  # fmt: skip
        header = ["metric", *(f"{s} [95% CI]" for s in META_STATS), "n", "notes"]
        tables.append((f"{level} level", header, rows))
    block = meta.get("ifteval")
    if isinstance(block, Mapping):
        cat, cit = block.get("CAT"), block.get("CIT")
        cat = cat if isinstance(cat, Mapping) else {}
        cit = cit if isinstance(cit, Mapping) else {}
        names = list(dict.fromkeys([*cat, *cit]))
        if names:
            rows = [[str(n), _coefficient_text(cat.get(n)), _coefficient_text(cit.get(n))]
                    for n in names]  # fmt: skip
            tables.append(("IFTEval (units: system × group means)", ["metric", "CAT", "CIT"], rows))
        tfa = block.get("TFA")
        columns = tfa.get("columns") if isinstance(tfa, Mapping) else None
        if isinstance(tfa, Mapping) and isinstance(columns, Mapping):
            rows = [[str(n), _coefficient_text(r)] for n, r in columns.items()]
            title = f"TFA: relative change {tfa.get('before')} → {tfa.get('after')}"
            tables.append((title, ["column", "mean relative change"], rows))
    return tables


def meta_skipped(meta: Mapping[str, Any]) -> list[str]:
    """`level: why` for each level the meta-evaluation could not compute."""
    skipped = meta.get("skipped_levels")
    return (
        [f"{k}: skipped ({v})" for k, v in skipped.items()] if isinstance(skipped, Mapping) else []
    )


def has_estimates(results: EvalResults) -> bool:
    return any(
        dec.budget is not None
        for m in results.models.values()
        for t in m.tasks.values()
        for dec in t.decodings.values()
    )


ESTIMATED_NOTE = (
    f"{ESTIMATED_MARK} estimated from part of the template × instance grid (a budgeted run; "
    "see each table's note for how much)."
)

GROUP_HEADER = ["A", "B", "Δ Sharpe", "p", "p adjusted", "verdict"]
GROUP_VERDICT = {"a_better": "A better", "b_better": "B better", "tied": "tied"}


def groups_text(groups: ModelGroups) -> str:
    """The tied groups, best first: "{a, b} ≥ {c}" (a model may be in several)."""
    return "  ·  ".join("{" + ", ".join(g) + "}" for g in groups.groups)


def group_sections(
    results: EvalResults,
) -> Iterator[tuple[str, str, str, ModelGroups, list[list[str]]]]:
    """(task, decoding, metric, groups, rows of the corrected tests) per model group."""
    for task_name, per_dec in (results.model_groups or {}).items():
        for decoding, per_metric in per_dec.items():
            for metric, groups in per_metric.items():
                rows = [
                    [
                        t.model_a,
                        t.model_b,
                        f"{t.diff:+.3f}",
                        f"{t.p_value:.3f}",
                        f"{t.p_adjusted:.3f}",
                        GROUP_VERDICT[t.verdict],
                    ]
                    for t in groups.tests
                ]
                yield task_name, decoding, metric, groups, rows


def group_title(task_name: str, decoding: str, metric: str, groups: ModelGroups) -> str:
    mark = f" ({ESTIMATED_MARK} estimated)" if groups.estimated else ""
    return f"which models differ · {task_name} · {decoding} · {metric}{mark}"


def group_note(groups: ModelGroups) -> str:
    return (
        f"Statistically tied groups (Sharpe score, best first): {groups_text(groups)}. "
        f"Every pair tested at a family-wise level of {groups.level:g} "
        f"({groups.correction}); models in no common group differ."
    )


SPACE_HEADER = ["dimension", "share (95% CI)", "η²", "best", "worst", "best − worst (95% CI)"]
LEVEL_HEADER = ["dimension", "level", "templates", "mean (95% CI)", "best / worst"]
SPACE_NOTE = (
    "share: omega², the part of the variance over templates a dimension explains beyond "
    "chance, each dimension alone (can fall below 0); η²: the same without the chance "
    "correction; best − worst: the levels with the highest and lowest mean score; each "
    "level's mean: over the templates at that level. Intervals from the aggregate's "
    "templates × instances replicates."
)


class SpaceSection(NamedTuple):
    """A prompt space's numbers for one metric, as the views show them."""

    metric: str
    percentiles: str  # one line: the template scores' percentiles with intervals
    dimensions: list[list[str]]  # SPACE_HEADER rows: each dimension's effect
    levels: list[list[str]]  # LEVEL_HEADER rows: every level's mean with its interval


def space_sections(dec: DecodingResult) -> Iterator[SpaceSection]:
    """Per metric of a prompt space: the percentiles line, the dimension rows and the
    level rows."""
    for metric, space in (dec.space or {}).items():
        percentiles = ", ".join(
            f"p{p.q:g} {fmt(p.value)}{ci_text(p.ci_low, p.ci_high)}" for p in space.percentiles
        )
        rows = [
            [
                dim,
                fmt(e.share) + ci_text(e.share_ci_low, e.share_ci_high),
                fmt(e.eta_squared),
                e.best,
                e.worst,
                fmt(e.best_minus_worst) + ci_text(e.diff_ci_low, e.diff_ci_high),
            ]
            for dim, e in space.dimensions.items()
        ]
        levels = [
            [
                dim,
                lv.level,
                str(lv.n_templates),
                fmt(lv.mean) + ci_text(lv.ci_low, lv.ci_high),
                _best_or_worst(lv.level, e),
            ]
            for dim, e in space.dimensions.items()
            for lv in e.levels
        ]
        estimated = (
            f" ({ESTIMATED_MARK} estimated from part of the grid)" if space.estimated else ""
        )
        line = f"{space.n_templates} templates of a space{estimated}: {percentiles}"
        yield SpaceSection(metric, line, rows, levels)


def _best_or_worst(level: str, effect: DimensionEffect) -> str:
    if effect.best == effect.worst or level not in (effect.best, effect.worst):
        return ""
    return "best" if level == effect.best else "worst"

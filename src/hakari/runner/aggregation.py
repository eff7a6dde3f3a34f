"""Collected predictions → numbers: metrics per template (with their bootstrap interval),
aggregates across templates with their bootstrap CI, and, when several models ran, the
alpha sweep and the paired comparisons (from the bootstraps kept in a `BootstrapStore`).
(The chance-rate baseline comes from the row check in `preflight.scan_rows`, one pass
shared by all models.)"""

from __future__ import annotations

from typing import Any

from hakari import aggregate as agg
from hakari.aggregate import AlphaSweepPoint, BootstrapResult, PairedComparison
from hakari.aggregate.dimensions import summarize
from hakari.aggregate.multiple import ModelGroups, adjust, group_record
from hakari.results import DecodingResult, EvalResults, TemplateResult
from hakari.runner.collect import Collected
from hakari.runner.options import RunOptions
from hakari.scoring import corpus
from hakari.tasks.loader import Task
from hakari.tasks.space import levels_field


def metric_options(task: Task, metric: str, opts: RunOptions) -> dict[str, Any]:
    if metric not in ("exact_match", "f1"):
        return {}
    # Predictions are NFKC-normalised (Appendix B). In first-line mode golds are too:
    # otherwise an exact copy of a gold with full-width brackets (252 JSQuAD golds) could
    # never match. Paper mode compares golds as they are: Appendix B is silent on them.
    return {"lang": task.spec.language, "nfkc": opts.qa_mode == "first-line"}


# (task, decoding) -> metric -> model -> bootstrap: what the paired comparisons read.
BootstrapStore = dict[tuple[str, str], dict[str, dict[str, BootstrapResult]]]


def score(
    task: Task,
    collected: Collected,
    opts: RunOptions,
    bootstraps: dict[str, BootstrapResult] | None = None,
) -> DecodingResult:
    """Metrics per template and aggregates; each metric's bootstrap goes into
    `bootstraps` (metric -> result) when given."""
    spec = task.spec
    dec = DecodingResult()
    golds = collected.golds
    for template_id, preds in collected.predictions.items():
        scores: dict[str, float] = {
            m: float(corpus.compute(m, preds, golds, **metric_options(task, m, opts)))
            for m in spec.metrics
        }
        dec.templates[template_id] = TemplateResult(
            metrics=scores,
            fallback_rate=collected.fallbacks.get(template_id, 0) / max(len(preds), 1),
            n=len(preds),
            **levels_field(spec, template_id),
        )
    for m in spec.metrics:
        per_template = {tid: r.metrics[m] for tid, r in dec.templates.items()}
        if not per_template:
            continue
        boot = None
        if opts.n_boot > 0 and len(golds) > 1:
            # the bootstrap's statistics: its point estimates come from the same
            # per-template scores the replicates use
            boot = agg.bootstrap(
                dict(collected.predictions),
                golds,
                m,
                alpha=opts.alpha,
                n_boot=opts.n_boot,
                seed=opts.seed,
                **metric_options(task, m, opts),
            )
            dec.aggregate[m] = boot.stats
            for template_id, interval in boot.template_intervals().items():
                template = dec.templates[template_id]
                template.ci = {**(template.ci or {}), m: interval}
            if bootstraps is not None:
                bootstraps[m] = boot
        else:
            dec.aggregate[m] = agg.aggregate(per_template, alpha=opts.alpha)
        _space(dec, m, per_template, boot)
    return dec


def _space(
    dec: DecodingResult, metric: str, per_template: dict[str, float], boot: BootstrapResult | None
) -> None:
    """What a prompt space tells, from the same bootstrap as the aggregate (templates
    with levels only: a run without a space writes nothing)."""
    levels = {tid: r.levels for tid, r in dec.templates.items()}
    space = summarize(per_template, levels, boot, corpus.get(metric).value_range)
    if space is not None:
        dec.space = {**(dec.space or {}), metric: space}


def alpha_sweeps(results: EvalResults) -> dict[str, dict[str, dict[str, list[AlphaSweepPoint]]]]:
    sweeps: dict[str, dict[str, dict[str, list[AlphaSweepPoint]]]] = {}
    model_names = list(results.models)
    first = results.models[model_names[0]]
    for task_name, task_result in first.tasks.items():
        for decoding, dec in task_result.decodings.items():
            for metric in dec.aggregate:
                stats = {}
                for model in model_names:
                    other = results.models[model].tasks.get(task_name)
                    other_dec = other.decodings.get(decoding) if other else None
                    if other_dec is None or metric not in other_dec.aggregate:
                        continue
                    a = other_dec.aggregate[metric]
                    stats[model] = (a.mean, a.std)
                if len(stats) > 1:
                    sweeps.setdefault(task_name, {}).setdefault(decoding, {})[metric] = (
                        agg.alpha_sweep(stats)
                    )
    return sweeps


def paired_comparisons(store: BootstrapStore) -> dict[str, dict[str, list[PairedComparison]]]:
    """`paired[TASK][DECODING]`: every pair of models on every metric, models in run
    order (A ran before B)."""
    out: dict[str, dict[str, list[PairedComparison]]] = {}
    for (task_name, decoding), per_metric in store.items():
        items = [
            comparison
            for metric, per_model in per_metric.items()
            if len(per_model) > 1
            for comparison in agg.compare_all(per_model, metric)
        ]
        if items:
            out.setdefault(task_name, {})[decoding] = items
    return out


GROUPS_FROM = 3  # models: with two, `paired` says it all


def model_groups(store: BootstrapStore) -> dict[str, dict[str, dict[str, ModelGroups]]]:
    """`model_groups[TASK][DECODING][METRIC]` when at least `GROUPS_FROM` models ran: every
    pair's Sharpe difference corrected for the number of pairs (Romano-Wolf step-down on
    the shared replicates) and the groups of tied models (`aggregate.multiple`)."""
    out: dict[str, dict[str, dict[str, ModelGroups]]] = {}
    for (task_name, decoding), per_metric in store.items():
        for metric, per_model in per_metric.items():
            if len(per_model) < GROUPS_FROM:
                continue
            pairs = agg.compare_all(per_model, metric)
            tests = adjust(
                [(c.model_a, c.model_b) for c in pairs],
                [c.replicates["sharpe"] for c in pairs],
                [c.sharpe.p_value for c in pairs],
            )
            scores = {model: boot.stats.sharpe for model, boot in per_model.items()}
            out.setdefault(task_name, {}).setdefault(decoding, {})[metric] = group_record(
                tests, scores
            )
    return out

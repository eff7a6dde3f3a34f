"""The typed results of a run: the same data as `results.json`.

Layout (schema_version 1):
models[MODEL].tasks[TASK].decodings[DECODING].templates[TEMPLATE_ID]
    -> {metrics: {METRIC: float}, fallback_rate, n, ci: {METRIC: {low, high}}}
models[MODEL].tasks[TASK].decodings[DECODING].aggregate[METRIC]
    -> {mean, std, min, max, sharpe, alpha, ci_low, ci_high, ...}
models[MODEL].tasks[TASK].chance -> {METRIC: float}
alpha_sweep[TASK][DECODING][METRIC] -> [{alpha, scores, ranking}]   (several models)
families[FAMILY][MODEL][DECODING][METRIC] -> {members, over_questions, over_subjects}
leaderboards[FAMILY][MODEL][DECODING] -> {categories: {CATEGORY: {members, missing,
                                          partial, reference, score}}, nejumi, ...}
paired[TASK][DECODING] -> [{model_a, model_b, metric, alpha,            (several models)
                            mean: {a, b, diff, ci_low, ci_high, p_value, verdict},
                            sharpe: {same}, n_templates, n_instances, n_boot,
                            confidence, seed, ci_method}]

Every aggregate with a bootstrap has `ci_method` ("studentized": see
`hakari.aggregate.intervals` for the method and the population it targets),
`ci_clipped` (the interval ends cut to their quantity's range, e.g. ["std_low"]) and
`sharpe_caveat` ("negative_mean" when mean < 0, else null). Written without credentials
(`hakari._util.redact`: model specs, the command, failure messages). In `paired`, `diff`
is A − B of the published point estimates, its CI comes from the same resampled templates ×
instances for both models, and `verdict` is "a_better" / "b_better" when the CI excludes
0, else "inconclusive". See docs/architecture.md, "results.json".

Every statistic is a typed record (`hakari._util.records.Record`, a pydantic model with a
docstring on each field), one module per part of the file: `stats` (`AggregateStats`,
`TemplateInterval`, the Sharpe score), `sweep` (`AlphaSweepPoint` and the sweep itself),
`paired` (`PairedComparison`, `ModelGroups`), `budget` (what a budgeted run did), `run` (the
containers and the run's `RunConfig`), `families` (a task family pooled, a family's
leaderboard view: `FamilySummary`, `Leaderboard`), `imported` (where an imported run's numbers came
from), `space` (what a prompt space tells: `space[METRIC]`), `vocab` (the closed sets of
values the schema shares with task files and requests).
`hakari.aggregate` computes the statistics and builds these records; this package imports
nothing of hakari but `_util`, so reading a run (`hakari report`) loads neither the
aggregation and scoring code nor scipy (an import-linter contract and
tests/contracts/test_architecture.py keep it so). What decides the bytes: a results.json
read and written back is unchanged (keys absent in an older file stay absent, unknown
keys of a newer one are kept), and a run writes the same bytes as before the records were
typed (tests/runner/test_results_json.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hakari.results.budget import BudgetRecord, BudgetRound, DesignRecord, EstimatorRecord
    from hakari.results.families import (
        FamilyScore,
        FamilySummary,
        Leaderboard,
        LeaderboardCategory,
    )
    from hakari.results.imported import DroppedCells, ImportRecord, SourceFile
    from hakari.results.paired import (
        VERDICTS,
        GroupTest,
        ModelGroups,
        PairedComparison,
        PairedStatistic,
        Verdict,
        verdict_of,
    )
    from hakari.results.run import (
        SCHEMA_VERSION,
        DecodingResult,
        EvalResults,
        GenerationBudget,
        ModelResult,
        RescoredMetric,
        RunConfig,
        TaskResult,
        TemplateBudget,
        TemplateResult,
        library_versions,
    )
    from hakari.results.stats import STD_KIND, AggregateStats, TemplateInterval, sharpe_score
    from hakari.results.sweep import AlphaSweepPoint, alpha_sweep, default_alphas, rank_models
    from hakari.results.vocab import AnswerType, Language, PromptFormat, QAMode

# `import hakari.results.vocab` (the backends, at `import hakari`) runs this file: the
# records load on first use, so a bare import stays cheap (benchmarks/bench_startup.py)
_WHERE = {
    "BudgetRecord": "budget",
    "BudgetRound": "budget",
    "DesignRecord": "budget",
    "EstimatorRecord": "budget",
    "DroppedCells": "imported",
    "ImportRecord": "imported",
    "SourceFile": "imported",
    "VERDICTS": "paired",
    "GroupTest": "paired",
    "ModelGroups": "paired",
    "PairedComparison": "paired",
    "PairedStatistic": "paired",
    "Verdict": "paired",
    "verdict_of": "paired",
    "SCHEMA_VERSION": "run",
    "DecodingResult": "run",
    "EvalResults": "run",
    "FamilyScore": "families",
    "FamilySummary": "families",
    "Leaderboard": "families",
    "LeaderboardCategory": "families",
    "GenerationBudget": "run",
    "ModelResult": "run",
    "RescoredMetric": "run",
    "RunConfig": "run",
    "TaskResult": "run",
    "TemplateBudget": "run",
    "TemplateResult": "run",
    "library_versions": "run",
    "STD_KIND": "stats",
    "AggregateStats": "stats",
    "TemplateInterval": "stats",
    "sharpe_score": "stats",
    "AlphaSweepPoint": "sweep",
    "alpha_sweep": "sweep",
    "default_alphas": "sweep",
    "rank_models": "sweep",
    "AnswerType": "vocab",
    "Language": "vocab",
    "PromptFormat": "vocab",
    "QAMode": "vocab",
}


__all__ = [
    "SCHEMA_VERSION",
    "STD_KIND",
    "VERDICTS",
    "AggregateStats",
    "AlphaSweepPoint",
    "AnswerType",
    "BudgetRecord",
    "BudgetRound",
    "DecodingResult",
    "DesignRecord",
    "DroppedCells",
    "EstimatorRecord",
    "EvalResults",
    "FamilyScore",
    "FamilySummary",
    "GenerationBudget",
    "GroupTest",
    "ImportRecord",
    "Language",
    "Leaderboard",
    "LeaderboardCategory",
    "ModelGroups",
    "ModelResult",
    "PairedComparison",
    "PairedStatistic",
    "PromptFormat",
    "QAMode",
    "RescoredMetric",
    "RunConfig",
    "SourceFile",
    "TaskResult",
    "TemplateBudget",
    "TemplateInterval",
    "TemplateResult",
    "Verdict",
    "alpha_sweep",
    "default_alphas",
    "library_versions",
    "rank_models",
    "sharpe_score",
    "verdict_of",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value

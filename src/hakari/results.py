"""The typed results of a run: the same data as `results.json`.

Layout (schema_version 1):
models[MODEL].tasks[TASK].decodings[DECODING].templates[TEMPLATE_ID]
    -> {metrics: {METRIC: float}, fallback_rate, n}
models[MODEL].tasks[TASK].decodings[DECODING].aggregate[METRIC]
    -> {mean, std, min, max, sharpe, alpha, ci_low, ci_high, ...}
models[MODEL].tasks[TASK].chance -> {METRIC: float}
alpha_sweep[TASK][DECODING][METRIC] -> [{alpha, scores, ranking}]   (several models)
paired[TASK][DECODING] -> [{model_a, model_b, metric, alpha,            (several models)
                            mean: {a, b, diff, ci_low, ci_high, p_value, verdict},
                            sharpe: {same}, n_templates, n_instances, n_boot,
                            confidence, seed, ci_method}]

Every aggregate with a bootstrap has `ci_method` ("studentized": see
`hakari.aggregate.intervals` for the method and the population it targets) and
`sharpe_caveat` ("negative_mean" when mean < 0, else null). In `paired`, `diff` is A − B
of the published point estimates, its CI comes from the same resampled templates ×
instances for both models, and `verdict` is "a_better" / "b_better" when the CI excludes
0, else "inconclusive". See docs/architecture.md, "results.json".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hakari._util.atomic import write_json_atomic

SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class TemplateResult(_Model):
    metrics: dict[str, float]
    fallback_rate: float
    n: int


class DecodingResult(_Model):
    templates: dict[str, TemplateResult] = Field(default_factory=dict)
    aggregate: dict[str, dict[str, Any]] = Field(default_factory=dict)
    generated: int = 0  # requests sent to the model in this run
    cached: int = 0  # requests answered from the cache
    wall_s: float = 0.0
    skipped: str | None = None  # why this decoding does not apply to the task
    # constrained: answers that do not fullmatch their regex although generation was not
    # cut by the budget, i.e. the engine ignored the constraint (0 for an engine that
    # applies it; None for other decodings)
    constraint_misses: int | None = None
    # answers holding text UTF-8 cannot encode (lone surrogates, e.g. a server's JSON
    # "\ud800"): kept exactly, written as JSON escapes, counted here
    unencodable_answers: int = 0
    # cached answers that could not be read back (bad JSON, a field of the wrong type):
    # cache misses, generated again and stored over the bad rows
    unreadable_cache_rows: int = 0


class TaskResult(_Model):
    language: str
    n_instances: int
    metrics: list[str]
    chance: dict[str, float] = Field(default_factory=dict)
    decodings: dict[str, DecodingResult] = Field(default_factory=dict)


class ModelResult(_Model):
    identity: dict[str, str]
    tasks: dict[str, TaskResult] = Field(default_factory=dict)


class EvalResults(_Model):
    schema_version: int = SCHEMA_VERSION
    config: dict[str, Any]
    versions: dict[str, str]
    models: dict[str, ModelResult] = Field(default_factory=dict)
    alpha_sweep: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] | None = None
    paired: dict[str, dict[str, list[dict[str, Any]]]] | None = None
    output_dir: str | None = None

    # model spec -> why it has no results (a later model failed or the run was stopped)
    failed: dict[str, str] = Field(default_factory=dict)
    n_samples: int | None = None  # lines of the samples.jsonl written with this file

    def write(self, path: Path) -> None:
        """Whole or not at all (`hakari._util.atomic`)."""
        write_json_atomic(path, self.model_dump(mode="json"))

    @classmethod
    def read(cls, path: Path) -> EvalResults:
        return cls.model_validate_json(path.read_text(encoding="utf-8"))


def library_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in (
        "hakari",
        "torch",
        "transformers",
        "tokenizers",
        "llguidance",
        "datasets",
        "numpy",
        "scipy",
        "scikit-learn",
    ):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    import platform

    out["python"] = platform.python_version()
    return out

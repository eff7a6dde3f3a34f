"""The containers of results.json: a run's `RunConfig` and the model → task → decoding →
template tree of its results (`EvalResults`, written and read here)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field, ValidationInfo, field_validator, model_validator

from hakari._util.atomic import json_text, write_text_atomic
from hakari._util.infiles import read_input
from hakari._util.records import Record, read_from_file
from hakari._util.redact import redact_identity, redact_tree
from hakari.results.budget import BudgetRecord
from hakari.results.families import FamilySummary, Leaderboard
from hakari.results.imported import ImportRecord
from hakari.results.paired import ModelGroups, PairedComparison
from hakari.results.space import SpaceSummary
from hakari.results.stats import AggregateStats, TemplateInterval
from hakari.results.sweep import AlphaSweepPoint
from hakari.results.vocab import Language, Limit, PromptFormat, QAMode

SCHEMA_VERSION = 1


class _TaskFacts(Protocol):
    """What a task's result copies from its spec (`hakari.tasks.spec.TaskSpec`)."""

    @property
    def language(self) -> Language: ...

    @property
    def metrics(self) -> Sequence[object]: ...


class TemplateBudget(Record):
    """The generation budget of a template."""

    max_new_chars: int | None = None
    """Characters the answer may have after its leading whitespace (the same for every
    tokenizer); null: no character budget, the token cap alone."""
    max_new_tokens: int | None = None
    """Tokens the model may generate (by default 4 a character of `max_new_chars`)."""


class GenerationBudget(TemplateBudget):
    """The generation budget of a task: the one most of its templates share, and the
    templates with a budget of their own."""

    WRITTEN_WHEN_GIVEN = frozenset({"templates"})

    greedy_stop: list[str] = Field(default_factory=list)
    """Where greedy decoding stops: each string, once the first non-whitespace character
    has been generated (constrained decoding stops where its regex ends)."""
    templates: dict[str, TemplateBudget] | None = None
    """Template id -> its budget, for the templates whose budget differs from the task's
    (written only when there is one)."""


class RunConfig(Record):
    """What the run was asked to do: `config` in results.json, its keys in this order.

    Every key is null when the file's version did not record it (read from such a file,
    the key stays absent when written back); keys of newer versions are kept as they are.
    The budget keys are written for budgeted runs only.
    """

    WRITTEN_WHEN_GIVEN = frozenset(
        {
            "threads",
            "omp_wait_policy",
            "cpu_busy_at_start",
            "budget",
            "target_ci",
            "until_decided",
            "run_in_full",
            "task_prompt_formats",
        }
    )

    models: list[str] | None = None
    """The model specs, in the order they ran (`--model`)."""
    tasks: list[str] | None = None
    """The task names, in the order they ran (`--tasks`)."""
    task_files: dict[str, str] | None = None
    """Task name -> the task file it was loaded from (a path on the machine that ran it)."""
    decodings: list[str] | None = None
    """The decodings run: "greedy", "constrained", "loglik" (`--decoding`)."""
    templates: str | list[str] | None = None
    """The templates asked for: "all", or their ids (`--templates`)."""
    limit: Limit = None
    """`--limit`: the first N rows of each task's split; "all": every row (a jaster set's
    default of its first 100 lifted); null: each task's default (all, or a jaster set's
    first 100)."""
    sample: int | None = None
    """`--sample`: a seeded random N rows of each task's split; null: no sample."""
    seed: int | None = None
    """`--seed`: the seed of `--sample` and of the bootstrap."""
    sampled_rows: dict[str, list[int]] | None = None
    """Task -> the split positions `--sample` chose (ascending); null without `--sample`."""
    alpha: float | None = None
    """`--alpha`: the alpha of the Sharpe score (eq. 1), ≥ 0."""
    std: str | None = None
    """Which standard deviation `std` is, in words: "population (ddof=0) across templates"."""
    em_f1: str | None = None
    """Which exact-match / F1 scorers were used and how golds were normalised, in words."""
    qa_mode: QAMode | None = None
    """`--qa-mode`: "first-line" or "paper", the SQuAD/JSQuAD post-processing
    (`hakari.tasks.extract`)."""
    generation_budgets: dict[str, GenerationBudget] | None = None
    """Task -> its generation budget."""
    batch_size: int | None = None
    """`--batch-size`: prompts per backend batch (no effect on the scores); null: the
    backend's own (transformers: 32, or 8 for models of 1B parameters or more on a CPU)."""
    prompt_format: PromptFormat | None = None
    """`--prompt-format`: "auto", "chat" or "completion" (what auto chose is in each
    model's `identity`)."""
    task_prompt_formats: dict[str, PromptFormat] | None = None
    """Task -> the prompt format its own file gave it under `--prompt-format auto` (a
    jaster set: "completion", llm-jp-eval's plain text, for every model whatever its
    `identity` says); written when a task has one."""
    dtype: str | None = None
    """`--dtype` of in-process models, e.g. "float32"."""
    device: str | None = None
    """`--device` of in-process models, e.g. "auto", "cpu", "cuda"."""
    threads: int | None = None
    """torch's CPU threads of in-process (transformers) models: `--threads`, else
    hakari's rule (`hakari.backends.cpu.default_threads`). Written for runs with such a
    model only."""
    omp_wait_policy: str | None = None
    """OpenMP's wait policy those threads ran with: "passive" (set by the `hakari`
    command where other work kept the CPUs busy as it started), "active", or
    "unset" (libgomp's own: spin, then sleep; the command's choice on a quiet machine).
    Written with `threads`."""
    cpu_busy_at_start: float | None = None
    """Other work on this process's CPUs while the `hakari` command started, in CPUs (a
    busy loop: 1.0), from which it chose `omp_wait_policy` (passive from 0.5); written
    where the command chose (not where `OMP_WAIT_POLICY` was set, nor from Python)."""
    n_boot: int | None = None
    """`--n-boot`: bootstrap replicates per aggregate; 0: no bootstrap (no CIs)."""
    data_dir: str | None = None
    """`--data-dir`: where local task data was read from; null: the default."""
    serving: dict[str, Any] | None = None
    """The serving backends' options (`openai:`, `vllm:` specs): every field of
    `hakari.backends.serving.ServingOptions` by name, as `dataclasses.asdict` gives it
    (kept as a mapping so that a file with other serving options reads back unchanged)."""
    argv: list[str] | None = None
    """The command line that started the run, secrets scrubbed; null when the run came
    from Python (`evaluate`)."""
    started: str | None = None
    """When the run started: local time, ISO 8601 to the second."""
    budget: str | None = None
    """`--budget` as given (a budgeted run only; see each decoding's `budget`)."""
    target_ci: float | None = None
    """`--target-ci` (a budgeted run only)."""
    until_decided: bool | None = None
    """`--until-decided` (a budgeted run only)."""
    run_in_full: dict[str, str] | None = None
    """A budgeted run only: task -> why it ran its whole grid after all (the budget
    covers the grid, or the grid is too small to estimate honestly and cheap to run in
    full). Such a task is a full run: its numbers are not estimated and its decodings
    have no `budget` record."""

    def recorded(self) -> dict[str, Any]:
        """The settings that have a value, in JSON form (keys of newer versions included)."""
        return {key: value for key, value in self.to_dict().items() if value is not None}


class TemplateResult(Record):
    """One template's scores on all instances of a task × decoding."""

    WRITTEN_WHEN_GIVEN = frozenset({"estimated", "metrics_ci", "ci", "levels"})

    metrics: dict[str, float]
    """Metric -> the corpus-level score over the instances, on the metric's scale."""
    fallback_rate: float
    """Share of answers (0 to 1) that took the task's fallback: nothing matched."""
    n: int
    """Instances scored (in a budgeted run: the instances this template was run on)."""
    estimated: bool | None = None
    """True when `metrics` were estimated from part of the grid (a budgeted run): the
    template's score on every instance, estimated from the cells run. Written for such
    runs only."""
    metrics_ci: dict[str, list[float]] | None = None
    """Estimated runs only: metric -> [low, high], the interval of the score the full
    grid would have given this template."""
    ci: dict[str, TemplateInterval] | None = None
    """Metric -> the bootstrap interval of this template's score over the instances
    (`TemplateInterval`); written when a bootstrap ran (absent from files of versions
    before it was recorded)."""
    levels: dict[str, str] | None = None
    """A template generated from the task's space: dimension -> level name (the id is
    the levels joined by "."). Written for generated templates only."""


class RescoredMetric(Record):
    """A metric or judge score added to a finished run by `hakari score RUN_DIR`."""

    WRITTEN_WHEN_GIVEN = frozenset({"aggregate", "cells_scored", "grid_size"})

    templates: dict[str, float] = Field(default_factory=dict)
    """Template id -> the mean of its samples' scores (templates with no score left out)."""
    n_unscored: int = 0
    """Samples without a score (e.g. a judge verdict that could not be read)."""
    aggregate: AggregateStats | None = None
    """The statistics over the templates' means, as for the run's own metrics (written
    when at least one template has a score). In a budgeted run it is marked `estimated`:
    each template's mean is over the cells that ran, not the full grid."""
    cells_scored: int | None = None
    """A budgeted run only: the template × instance cells scored (the cells it ran)."""
    grid_size: int | None = None
    """A budgeted run only: the cells of the full grid (`cells_scored` of them were run)."""


class DecodingResult(Record):
    """One model × task × decoding."""

    WRITTEN_WHEN_GIVEN = frozenset(
        {
            "rescored",
            "refusals",
            "unencodable_answers",
            "unreadable_cache_rows",
            "redacted_secrets",
            "budget",
            "space",
            "undefined",
        }
    )

    templates: dict[str, TemplateResult] = Field(default_factory=dict)
    """Template id -> its scores, in task order."""
    aggregate: dict[str, AggregateStats] = Field(default_factory=dict)
    """Metric -> the statistics over the templates' scores."""
    generated: int = 0
    """Requests sent to the model in this run."""
    cached: int = 0
    """Requests answered from the response cache."""
    wall_s: float = 0.0
    """Wall time of this decoding in seconds (generation, scoring and bootstrap).
    Decodings that generated together (a task's greedy and constrained requests go to
    the backend in one call per chunk) split the time of those calls in proportion to
    the tokens each generated plus one per request generated."""
    skipped: str | None = None
    """Why this decoding does not apply to the task (e.g. loglik on a text task); null
    when it ran."""
    constraint_misses: int | None = None
    """Constrained decoding only: answers that do not fullmatch their regex although
    generation was not cut by the budget, i.e. the engine ignored the constraint (0 for
    an engine that applies it); null for the other decodings."""
    rescored: dict[str, RescoredMetric] | None = None
    """Metric -> scores added by `hakari score RUN_DIR` (written once it ran)."""
    unencodable_answers: int = 0
    """Answers holding text UTF-8 cannot encode (lone surrogates, e.g. a server's JSON
    "\\ud800"): kept exactly, written as JSON escapes (written when not 0)."""
    unreadable_cache_rows: int = 0
    """Cached answers that could not be read back (bad JSON, a field of the wrong type):
    cache misses, generated again and stored over the bad rows (written when not 0)."""
    refusals: int = 0
    """Prompts a server gave no text for (`"content": null` or a missing text) however
    often it was asked: each is scored as the task's fallback (so it is in
    `fallback_rate` too), flagged `"refused": true` in samples.jsonl and never cached, so a
    rerun asks again (written when not 0)."""
    redacted_secrets: int = Field(default=0, ge=0)
    """Occurrences of a configured API key (HAKARI_API_KEY, OPENAI_API_KEY, HF_TOKEN) or
    of an 8-character piece of one in the model's answers, replaced by *** before
    samples.jsonl and the response cache were written (a server that reflects its
    Authorization header; written when not 0)."""
    budget: BudgetRecord | None = None
    """A budgeted run: which part of the grid ran, how the numbers were estimated, the
    rounds (written for such runs only; then every number of this decoding is estimated)."""
    undefined: dict[str, dict[str, str]] | None = None
    """Metric -> template id -> why the metric is undefined for that template
    ("constant_predictions": its answers are one value; "constant_references": the golds
    are; "single_instance"): a correlation or MCC that scipy or sklearn cannot give,
    counted as 0.0 (chance) in the template mean and the Sharpe score, and said by every
    report view (written when there is one). In a budgeted run `<why>_in_cells_run`: so on
    the cells that ran, the template's estimate filled from them."""
    space: dict[str, SpaceSummary] | None = None
    """Metric -> what the prompt space tells: each dimension's share of the variance over
    templates with its best and worst level, and the 5th, 50th and 95th percentiles of
    the template scores (`hakari.aggregate.dimensions`); written when templates carry
    levels (a task's `space:`)."""

    @model_validator(mode="after")
    def _estimates_have_their_record(self, info: ValidationInfo) -> DecodingResult:
        # without it, estimated numbers would be shown as a full run's
        if (
            read_from_file(info)
            and self.budget is None
            and any(t.estimated for t in self.templates.values())
        ):
            raise ValueError(
                "its templates are marked estimated (from part of the grid) but it has no "
                "budget record: a hand-edited file; estimated numbers cannot be shown as "
                "measured ones"
            )
        return self


class TaskResult(Record):
    """One model × task."""

    WRITTEN_WHEN_GIVEN = frozenset({"uniform_guess", "majority_answer", "notes"})

    language: Language
    """The task's language: "en" or "ja"."""
    n_instances: int
    """Instances evaluated (after `--limit` / `--sample`)."""
    metrics: list[str]
    """The task's metrics, in its order (the first is the headline)."""
    chance: dict[str, float] = Field(default_factory=dict)
    """Metric -> the paper's fallback-only score (its tables' "chance" rows): the score of
    a model whose every output fails to parse, i.e. of always answering the fallback."""
    uniform_guess: dict[str, float] = Field(default_factory=dict)
    """Metric -> the expected score of a uniformly random choice (accuracy: the mean over the
    instances of 1/k_i, k_i an instance's number of choices; MCC 0);
    label tasks only; absent in files written before it existed."""
    majority_answer: dict[str, float] = Field(default_factory=dict)
    """Metric -> the score of always answering the most common gold label of the
    instances evaluated; label tasks only; absent in older files."""
    notes: list[str] = Field(default_factory=list)
    """Warnings about the instances evaluated (e.g. a `--limit` whose label mix is far
    from the split's); written only when there are some."""
    decodings: dict[str, DecodingResult] = Field(default_factory=dict)
    """Decoding -> its results, in run order."""

    @model_validator(mode="after")
    def _space_of_its_metrics(self, info: ValidationInfo) -> TaskResult:
        # a space record of a metric the task lacks was shown as the task's own
        if not read_from_file(info):
            return self
        for name, decoding in self.decodings.items():
            unknown = sorted(set(decoding.space or {}) - set(self.metrics))
            if unknown:
                raise ValueError(
                    f"decodings.{name}.space has a record for {unknown[0]!r}, which is not one "
                    f"of the task's metrics ({', '.join(self.metrics)}): a hand-edited file"
                )
        return self

    @classmethod
    def for_task(cls, spec: _TaskFacts, n_instances: int, chance: dict[str, float]) -> TaskResult:
        """A task's result before any decoding has run."""
        return cls(
            language=spec.language,
            n_instances=n_instances,
            metrics=[str(m) for m in spec.metrics],
            chance=chance,
        )


class ModelResult(Record):
    """One model."""

    WRITTEN_WHEN_GIVEN = frozenset({"serving"})

    identity: dict[str, str]
    """Who answered: backend, name, revision (weights' hash or hub commit), dtype, prompt
    format, adapter hash...: the model's part of the cache key."""
    tasks: dict[str, TaskResult] = Field(default_factory=dict)
    """Task -> its results, in run order."""
    serving: dict[str, Any] | None = None
    """The engines that answered, where the backend keeps a record (vLLM in-process:
    `data_parallel_size`, each engine's rank, Ray node, host, dtype, memory share and
    the prompts it answered, one that failed and why, and how prompts were dealt;
    transformers: the device, and a forward pass's cost measured on it when the model
    loaded, `pass_fixed_ms`, `pass_token_ms` and `pass_tokens`, the fixed part in tokens
    that cut the batches; a model of 1B parameters or more on a CPU is not measured and
    has `pass_tokens` alone); never part of a cache key. Written only for such a backend."""


class EvalResults(Record):
    """A run's results: results.json (see the module docstring for the layout)."""

    WRITTEN_WHEN_GIVEN = frozenset(
        {"rescoring", "model_groups", "families", "leaderboards", "imported"}
    )
    INVALID = "not a hakari results.json"

    schema_version: int = SCHEMA_VERSION
    """The layout's version: 1 (additions keep it; readers ignore keys they do not know)."""
    config: RunConfig
    """What the run was asked to do."""
    versions: dict[str, str]
    """Library -> its installed version (hakari, torch, transformers, ..., python)."""
    models: dict[str, ModelResult] = Field(default_factory=dict)
    """Model spec -> its results, in run order."""
    alpha_sweep: dict[str, dict[str, dict[str, list[AlphaSweepPoint]]]] | None = None
    """Task -> decoding -> metric -> the models' Sharpe scores and ranking per alpha;
    null with one model."""
    paired: dict[str, dict[str, list[PairedComparison]]] | None = None
    """Task -> decoding -> every pair of models on every metric (A ran before B); null
    with one model or without a bootstrap."""
    output_dir: str | None = None
    """The run folder this file was written to; null when the run kept no files."""
    failed: dict[str, str] = Field(default_factory=dict)
    """Model spec -> why it has no results (a later model failed or the run was stopped)."""
    n_samples: int | None = None
    """Lines of the samples.jsonl written with this file; null without a run folder."""
    rescoring: list[dict[str, Any]] | None = None
    """One entry per `hakari score RUN_DIR`: the metrics it added and its provenance
    (scorer models, judge prompts and summary); written once it ran."""
    families: dict[str, dict[str, dict[str, dict[str, FamilySummary]]]] | None = None
    """FAMILY -> MODEL -> DECODING -> METRIC -> `FamilySummary`: task families whose
    members ran (written only then)."""
    leaderboards: dict[str, dict[str, dict[str, Leaderboard]]] | None = None
    """FAMILY -> MODEL -> DECODING -> `Leaderboard`: a family whose file names a
    leaderboard's categories (`jaster`: llm-jp-eval's), written when its members ran."""
    model_groups: dict[str, dict[str, dict[str, ModelGroups]]] | None = None
    """Task -> decoding -> metric -> which models differ in Sharpe score after a
    multiple-comparison correction, and the groups of tied models
    (`hakari.aggregate.multiple`); written for runs of three or more models (with a
    bootstrap), whatever the plan: with two, `paired` says it all."""
    imported: ImportRecord | None = None
    """A run made by `hakari import` from another tool's outputs: where every number came
    from (`ImportRecord`: source, files and their hashes, producer versions, mapping
    options, cells left out); written for such runs only."""

    @model_validator(mode="after")
    def _groups_name_models_of_the_file(self, info: ValidationInfo) -> EvalResults:
        if not read_from_file(info) or not self.models:  # none: the readers say so
            return self
        for task, per_decoding in (self.model_groups or {}).items():
            for decoding, per_metric in per_decoding.items():
                for metric, groups in per_metric.items():
                    named = {*groups.scores, *(m for g in groups.groups for m in g)}
                    unknown = sorted(named - self.models.keys())
                    if unknown:
                        raise ValueError(
                            f"model_groups.{task}.{decoding}.{metric} names {unknown[0]!r}, "
                            "which is not one of the file's models"
                        )
        return self

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {value} is not one this hakari reads ({SCHEMA_VERSION}); "
                "was it written by a newer hakari?"
            )
        return value

    def sample_model_keys(self) -> dict[str, str]:
        """The key in `models` of each name samples.jsonl may give a model by: its
        identity's name (what a run writes in each sample) or the key itself."""
        out = {}
        for key, model in self.models.items():
            out[model.identity.get("name", key)] = key
            out.setdefault(key, key)
        return out

    def file_text(self) -> str:
        """The text of results.json: indent 2, non-ASCII kept as it is, and no
        credentials (model specs, the command, failure messages go through
        `hakari._util.redact`)."""
        data = self.to_dict()
        for model in data.get("models", {}).values():
            model["identity"] = redact_identity(model.get("identity", {}))
        return json_text(redact_tree(data))

    def write(self, path: Path) -> None:
        """Whole or not at all (`hakari._util.atomic`), as `file_text`."""
        write_text_atomic(path, self.file_text())

    @classmethod
    def read(cls, path: Path) -> EvalResults:
        """Strictly: an ill-typed value is a `HakariInputError` naming the file and field."""
        return cls.from_json(read_input(path), source=str(path))


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

"""The task file schema: a task is data (YAML), validated here with pydantic.

A task names its data source, how data fields feed the prompt placeholders, the gold
field, the label set, the templates (each with its answer regex) and the fallback rule
for outputs that do not parse. See docs/architecture.md and docs/task-format.md.
"""

from __future__ import annotations

import re
import string
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from hakari._util.regex import RegexError, compile_regex
from hakari.backends.base import tokens_for_chars
from hakari.results.vocab import AnswerType, Language
from hakari.scoring import corpus
from hakari.tasks.choices import ChoiceSpec, expand_raw
from hakari.tasks.jasterspec import JasterSource
from hakari.tasks.spacelevels import LEVEL_NAME
from hakari.tasks.spacespec import SpaceSpec

LabelValue = str | int | float

# `{{name}}` inside a regex or an answer key is replaced by the instance's field value
# (regex-escaped in the regex), for answer sets that differ per instance (e.g. the
# option texts of a multiple-choice question). Single braces keep their regex meaning.
INSTANCE_REF = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")
TEMPLATE_ID = re.compile(r"[0-9A-Za-z]+-[0-9A-Za-z]+")  # matched whole

DEFAULT_MAX_NEW_TOKENS = 8  # when a task sets neither budget


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HubSource(_Strict):
    """A dataset on the Hugging Face hub, loaded with `datasets.load_dataset`."""

    path: str
    name: str | None = None
    revision: str | None = None
    # a folder inside the repository, e.g. for parquet conversions of script datasets
    data_dir: str | None = None


class SplitSource(_Strict):
    """Where one split lives: a hub split name and/or a local file.

    `file` is resolved against `--data-dir` when given, else against the task file's
    folder (absolute paths are used as they are).
    """

    hub_split: str | None = None
    file: str | None = None
    format: Literal["jsonl", "json", "csv", "squad"] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> SplitSource:
        if self.hub_split is None and self.file is None:
            raise ValueError("a split needs `hub_split` or `file`")
        return self


class DataSpec(_Strict):
    hub: HubSource | None = None
    format: Literal["jsonl", "json", "csv", "squad"] = "jsonl"
    # CSV files without a header row: the names of their columns, in order
    columns: list[str] | None = None
    splits: dict[str, SplitSource] = Field(default_factory=dict)
    eval_split: str = "validation"
    # Inline instances: used by the built-in demo tasks; wins over `splits` for eval.
    instances: list[dict[str, Any]] | None = None
    # a jaster set read with llm-jp-eval's preprocessing (`tasks/jasterspec.py`)
    jaster: JasterSource | None = None

    @model_validator(mode="after")
    def _has_source(self) -> DataSpec:
        if self.jaster is not None:
            if self.splits or self.instances is not None or self.hub is not None:
                raise ValueError(
                    "`jaster` names the files itself: no `splits`, `instances` or `hub`"
                )
            if self.eval_split not in self.jaster.split_names():
                raise ValueError(f"eval_split {self.eval_split!r} is not cut by a jaster pool")
            return self
        if self.instances is None and self.eval_split not in self.splits:
            raise ValueError(
                f"eval_split {self.eval_split!r} is not in `splits` and no inline `instances`"
            )
        for split_name, split in self.splits.items():
            if split.hub_split is not None and split.file is None and self.hub is None:
                raise ValueError(f"split {split_name!r} names a hub split but `hub` is missing")
        return self


class Fallback(_Strict):
    """What an unparseable output becomes (paper, Appendix B)."""

    kind: Literal["label", "first_label", "number", "text"]
    value: LabelValue | None = None

    @model_validator(mode="after")
    def _value_needed(self) -> Fallback:
        if self.kind in ("label", "number") and self.value is None:
            raise ValueError(f"fallback kind {self.kind!r} needs a `value`")
        if self.kind == "number" and (
            isinstance(self.value, bool) or not isinstance(self.value, int | float)
        ):
            raise ValueError(f"fallback kind 'number' needs a number `value`, not {self.value!r}")
        return self


# the fallback kinds that give an answer of each answer type
FALLBACK_KINDS: dict[str, tuple[str, ...]] = {
    "label": ("label", "first_label"),
    "number": ("number",),
    "text": ("text",),
}


class Template(_Strict):
    id: str
    prompt: str
    regex: str
    # matched answer text -> label (label tasks only); keys may use {{field}}.
    answers: dict[str, LabelValue] | None = None
    max_new_tokens: int | None = Field(default=None, ge=1, le=4096)
    max_new_chars: int | None = Field(default=None, ge=1, le=4096)
    # a template of a space: dimension -> level (its id is the levels joined by ".")
    levels: dict[str, str] | None = None
    # a space's `prompt_format` level: plain text or a chat message, whatever the run's
    # `--prompt-format` (None: the run's, or the task's `prompt_format`)
    prompt_format: Literal["completion", "chat"] | None = None

    @model_validator(mode="after")
    def _id_form(self) -> Template:
        if self.levels is None:
            if not TEMPLATE_ID.fullmatch(self.id):
                raise ValueError(
                    f"template id {self.id!r} must look like '<prompt type>-<answer format>'"
                )
        elif self.id != ".".join(self.levels.values()) or not all(
            LEVEL_NAME.fullmatch(v) for v in self.levels.values()
        ):
            raise ValueError(f"template id {self.id!r} must be its levels joined by '.'")
        return self

    @field_validator("regex")
    @classmethod
    def _regex_compiles(cls, v: str) -> str:
        probe = INSTANCE_REF.sub("x", v)
        try:
            pattern = compile_regex(probe)
        except RegexError as exc:
            raise ValueError(f"invalid regex {v!r}: {exc}") from None
        if pattern.matches_empty():
            raise ValueError(f"regex {v!r} matches the empty string")
        return v

    @field_validator("prompt")
    @classmethod
    def _prompt_parses(cls, v: str) -> str:
        try:
            parsed = list(string.Formatter().parse(v))
        except ValueError as exc:
            raise ValueError(f"prompt is not a valid format string: {exc}") from exc
        for _, name, spec, conversion in parsed:
            if name is not None and not name.isidentifier():
                raise ValueError(
                    f"placeholder {{{name}}} is not a plain field name (use {{name}}, and "
                    "map nested fields with `fields:`; write {{ and }} for literal braces)"
                )
            if name is not None and (spec or conversion):
                # `{text:>2000000000}` pads every prompt to 2 GB; `{text!r}` quotes it
                shown = (
                    name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
                )
                raise ValueError(
                    f"placeholder {{{shown}}} has a conversion or format spec; a template "
                    f"takes the field's text as it is: write {{{name}}}"
                )
        return v

    def placeholders(self) -> list[str]:
        names = [f for _, f, _, _ in string.Formatter().parse(self.prompt) if f is not None]
        for name in names:
            if not name.isidentifier():
                raise ValueError(f"placeholder {{{name}}} is not a plain field name")
        return names

    def instance_refs(self) -> set[str]:
        refs = set(INSTANCE_REF.findall(self.regex))
        for key in self.answers or {}:
            refs.update(INSTANCE_REF.findall(key))
        return refs


def _gold_paths(target: str, fields: dict[str, str], choices: ChoiceSpec | None) -> set[str]:
    """The row fields that hold the gold: the target, and a choice task's own gold column
    (its target is the derived `gold_index`)."""
    paths = {fields.get(target, target)}
    if choices is not None and choices.gold_field:
        paths.add(choices.gold_field)
    return paths


class TaskSpec(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    language: Language
    description: str = ""
    data: DataSpec
    # placeholder or instance-ref name -> dotted path into a data row; names that are
    # not mapped are looked up in the row under their own name.
    fields: dict[str, str] = Field(default_factory=dict)
    target: str
    answer_type: AnswerType
    labels: list[LabelValue] | None = None
    # hand-written templates; a task with a `space` may have none
    templates: list[Template] = Field(default_factory=list)
    # multiple choice (`answer_type: choice`, expanded to a label task: `tasks/choices.py`)
    choices: ChoiceSpec | None = None
    # generated templates (`tasks/space.py`): named dimensions, each a list of levels
    space: SpaceSpec | None = None
    fallback: Fallback
    # corpus metrics by name (`hakari.scoring.corpus`): each must score this answer type
    metrics: list[str] = Field(min_length=1)
    # how a text answer is taken from the output: the template's regex (then the QA
    # mode's normalisation), or llm-jp-eval's rule: the text before the first blank
    # line, stripped, NFKC (`tasks/extract.py`)
    answer_cut: Literal["regex", "blank-line"] = "regex"
    # a protocol that sends its prompt as plain text (llm-jp-eval's: transformers'
    # text-generation pipeline, no chat template): a run's `--prompt-format auto` sends
    # this task's prompts so to every model; an explicit `--prompt-format` wins
    prompt_format: Literal["completion"] | None = None

    @field_validator("space")
    @classmethod
    def _space_hides_the_gold(
        cls, space: SpaceSpec | None, info: ValidationInfo
    ) -> SpaceSpec | None:
        """No text of the space reads the gold (else every prompt hands the model the
        answer): the question field, a layout's or a level's `{field}`."""
        if space is None or "target" not in info.data:
            return space
        fields, choices = info.data.get("fields", {}), info.data.get("choices")
        gold = _gold_paths(info.data["target"], fields, choices)
        for where, name in space.fields_read():
            if fields.get(name, name) in gold:
                raise ValueError(
                    f"{where} reads {{{name}}}, the gold field {fields.get(name, name)!r}: "
                    "it hands the model the answer"
                    if where != "space.question"
                    else f"space.question is the gold field {name!r}: it hands the model the "
                    "answer (name the field that holds the question)"
                )
        return space

    @field_validator("metrics")
    @classmethod
    def _metrics_once(cls, v: list[str]) -> list[str]:
        twice = sorted({m for m in v if v.count(m) > 1})
        if twice:
            raise ValueError(f"metric {twice[0]!r} is listed twice")
        return v

    # Generation budget. `max_new_chars` counts the answer's characters (after leading
    # whitespace), the same for every tokenizer; the token cap then defaults to what any
    # tokenizer needs for it (4 a character). `max_new_tokens` alone is a plain token cap.
    max_new_tokens: int | None = Field(default=None, ge=1, le=16384)
    max_new_chars: int | None = Field(default=None, ge=1, le=4096)
    prompt_suffix: str = ""

    @model_validator(mode="before")
    @classmethod
    def _expand_choice(cls, raw: Any) -> Any:
        return expand_raw(raw) if isinstance(raw, dict) else raw

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        if not self.templates and self.space is None:
            raise ValueError("a task needs at least one template (or a `space`)")
        if self.space is not None:
            self._check_space_kind(self.space)
        seen: set[str] = set()
        for t in self.templates:
            if t.id in seen:
                raise ValueError(f"duplicate template id {t.id!r}")
            seen.add(t.id)
            self._check_fields_read(t)
        if self.answer_cut != "regex" and self.answer_type != "text":
            raise ValueError(f"answer_cut {self.answer_cut!r} is for text answers")
        if self.fallback.kind not in FALLBACK_KINDS[self.answer_type]:
            raise ValueError(
                f"fallback.kind {self.fallback.kind!r} does not give a {self.answer_type!r} "
                f"answer (use {' or '.join(FALLBACK_KINDS[self.answer_type])})"
            )
        if self.answer_type == "label":
            if not self.labels:
                raise ValueError("a label task needs `labels`")
            label_keys = {str(x) for x in self.labels}
            for t in self.templates:
                if not t.answers:
                    raise ValueError(f"template {t.id}: a label task's template needs `answers`")
                for key, lab in t.answers.items():
                    if str(lab) not in label_keys:
                        raise ValueError(
                            f"template {t.id}: answer {key!r} maps to {lab!r}, "
                            f"which is not in labels {self.labels}"
                        )
            if self.fallback.kind == "label" and str(self.fallback.value) not in label_keys:
                raise ValueError(f"fallback label {self.fallback.value!r} is not in labels")
        for name in self.metrics:
            metric = corpus.get(name)  # ValueError naming the known metrics
            if not metric.answer_types:  # e.g. given_score: a source's scores, imported
                raise ValueError(f"metric {name!r} scores no answers: {metric.description}")
            if self.answer_type not in metric.answer_types:
                raise ValueError(
                    f"metric {name!r} scores {', '.join(sorted(metric.answer_types))} answers, "
                    f"not {self.answer_type!r} ones"
                )
        return self

    def _check_space_kind(self, space: SpaceSpec) -> None:
        """A space serves a multiple-choice task or a generation task (text or number
        answers); a label task's answers map is its own."""
        if self.choices is None and self.answer_type == "label":
            raise ValueError(
                "a `space` needs a multiple-choice task (answer_type: choice) or a generation "
                "task (answer_type: text or number)"
            )
        try:
            space.check_answer_kind(choice=self.choices is not None)
        except ValueError as exc:
            raise ValueError(f"space: {exc}") from None

    def _check_fields_read(self, t: Template) -> None:
        """A prompt must read the instance (else every prompt is the same) and must not
        read the gold (else it hands the model the answer)."""
        placeholders = t.placeholders()
        if not placeholders:
            raise ValueError(
                f"template {t.id}: the prompt uses no field of the instance, so every "
                "prompt is the same"
            )
        gold = _gold_paths(self.target, self.fields, self.choices)
        for name in placeholders:
            if self.field_path(name) in gold:
                raise ValueError(
                    f"template {t.id}: the prompt's {{{name}}} is the target field "
                    f"{self.field_path(name)!r}: it hands the model the answer"
                )

    # --- derived helpers -------------------------------------------------------------

    def template(self, template_id: str) -> Template:
        for t in self.templates:
            if t.id == template_id:
                return t
        raise KeyError(template_id)

    def fallback_answer(self) -> LabelValue | None:
        """The answer given to an unparseable output (None for text tasks)."""
        if self.fallback.kind == "first_label":
            assert self.labels
            return self.labels[0]
        if self.fallback.kind == "text":
            return None
        return self.fallback.value

    def field_path(self, name: str) -> str:
        return self.fields.get(name, name)

    def max_chars_for(self, template: Template) -> int | None:
        return template.max_new_chars or self.max_new_chars

    @property
    def greedy_stop(self) -> tuple[str, ...]:
        """Where a free answer's generation ends: its first line; under llm-jp-eval's rule
        (`answer_cut: blank-line`) its first blank line, so that an answer spanning lines
        (wiki_dependency's) is whole and one followed by more lines reads as there."""
        return ("\n\n",) if self.answer_cut == "blank-line" else ("\n",)

    def max_tokens_for(self, template: Template) -> int:
        explicit = template.max_new_tokens or self.max_new_tokens
        if explicit is not None:
            return explicit
        chars = self.max_chars_for(template)
        return tokens_for_chars(chars) if chars is not None else DEFAULT_MAX_NEW_TOKENS

"""Judge prompts are versioned data files (`judges/prompts/*.yaml`), rendered safely.

A prompt file gives its id and version, the template with `{{field}}` placeholders, the
verdict format and scale, and the *delimiters* that fence untrusted text (model outputs,
references, instructions). Rendering substitutes every placeholder in one pass over the
template, so a value containing `{{reference}}` stays literal text; and inside each value
every match of a delimiter pattern is neutralised (its brackets become look-alikes:
`</response_1>` → `‹/response_1›`), so an output can never close its fence and pose as
the other response or as the instruction.

A user prompt file is any path ending in `.yaml` with the same fields.
"""

from __future__ import annotations

import hashlib
import math
import re
import string
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hakari._util.infiles import read_input
from hakari._util.regex import compile_regex, regex_problem
from hakari.errors import HakariInputError, one_line

VerdictFormat = Literal["csv_pair", "bracket", "free_text"]
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_DEFANG = str.maketrans({"<": "‹", ">": "›", "[": "⟦", "]": "⟧"})
ALIASES = {
    "ifteval-pair": "ifteval_pair",
    "pair": "ifteval_pair",
    "pfgen": "pfgen_10point",
    "pfgen-10point": "pfgen_10point",
    "single": "single_1to10",
    "single-1to10": "single_1to10",
    "error-analysis": "error_analysis",
}


# Per kind: the verdict format, the placeholders the template may use (what `Judge`
# fills in) and those it must use (a prompt that never shows the answer judges nothing).
KINDS: dict[str, tuple[VerdictFormat, frozenset[str], frozenset[str]]] = {
    "single": ("bracket", frozenset({"prompt", "reference", "response"}), frozenset({"response"})),
    "pair": (
        "csv_pair",
        frozenset({"prompt", "reference", "response1", "response2"}),
        frozenset({"response1", "response2"}),
    ),
    "analysis": ("free_text", frozenset({"task", "examples"}), frozenset({"examples"})),
}
EXAMPLE_FIELDS = (frozenset({"prompt", "response", "reference"}), frozenset({"response"}))


class JudgePrompt(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    version: int = Field(ge=1)
    source: str
    kind: Literal["pair", "single", "analysis"]
    verdict: VerdictFormat
    scale: tuple[float, float]
    max_new_tokens: int = Field(ge=1, le=32768)
    template: str
    example: str | None = None
    completion_prefix: str = ""
    completion_max_new_tokens: int | None = Field(default=None, ge=1, le=32768)
    delimiters: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()  # fields that may be missing (rendered "(none given)")
    reask: str = ""
    sha256: str = ""  # of the file, filled in by `load_prompt`

    @field_validator("delimiters")
    @classmethod
    def _compiles(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            if (problem := regex_problem(pattern)) is not None:
                raise ValueError(f"delimiter regex {pattern!r} cannot be used: {problem}")
        return value

    @field_validator("reask")
    @classmethod
    def _reask_fields(cls, value: str) -> str:
        """The re-ask is a `str.format` text with one field, `{reason}`."""
        try:
            names = {f for _, f, _, _ in string.Formatter().parse(value) if f is not None}
        except ValueError as exc:
            raise ValueError(f"reask is not a valid format text: {exc}") from None
        if names - {"reason"}:
            unknown = ", ".join(f"{{{n}}}" for n in sorted(names - {"reason"}))
            raise ValueError(
                f"reask uses {unknown}; it takes only {{reason}} (write {{{{ }}}} for braces)"
            )
        return value

    @model_validator(mode="after")
    def _fits_its_kind(self) -> JudgePrompt:
        verdict, allowed, required = KINDS[self.kind]
        if self.verdict != verdict:
            raise ValueError(f"a {self.kind} prompt gives a {verdict} verdict, not {self.verdict}")
        low, high = self.scale
        if self.kind != "analysis" and not (
            math.isfinite(low) and math.isfinite(high) and low < high
        ):
            raise ValueError(f"scale must be [low, high] with low < high (got {list(self.scale)})")
        _check_placeholders("template", self.template, allowed, required)
        if self.kind == "analysis":
            if self.example is None:
                raise ValueError("an analysis prompt needs an example template (field example)")
            _check_placeholders("example", self.example, *EXAMPLE_FIELDS)
        return self

    @property
    def tag(self) -> str:
        return f"{self.id}@v{self.version}"

    def fields(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.template))

    def neutralise(self, value: str) -> str:
        for pattern in self.delimiters:  # linear time: the value is a model's answer
            value = compile_regex(pattern, ignore_case=True).sub(
                lambda matched: matched.translate(_DEFANG), value
            )
        return value

    def render(self, values: dict[str, str], *, template: str | None = None) -> str:
        """The template with every placeholder replaced by its neutralised value."""
        text = self.template if template is None else template

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in values:
                raise KeyError(f"prompt {self.tag}: no value for {{{{{name}}}}}")
            return self.neutralise(values[name])

        return _PLACEHOLDER.sub(substitute, text)


def _check_placeholders(
    field: str, text: str, allowed: frozenset[str], required: frozenset[str]
) -> None:
    """Every {{placeholder}} of `text` is one the judge fills in, and the required ones
    are there."""
    found = set(_PLACEHOLDER.findall(text))
    shown = ", ".join(f"{{{{{n}}}}}" for n in sorted(allowed))
    if found - allowed:
        unknown = ", ".join(f"{{{{{n}}}}}" for n in sorted(found - allowed))
        raise ValueError(f"{field} uses {unknown}, which nothing fills in; it can use {shown}")
    if required - found:
        missing = ", ".join(f"{{{{{n}}}}}" for n in sorted(required - found))
        raise ValueError(f"{field} has no {missing}: the judge would never see what it judges")


def builtin_prompts() -> dict[str, Path]:
    folder = resources.files("hakari.judges") / "prompts"
    return {
        p.name[: -len(".yaml")]: Path(str(p)) for p in folder.iterdir() if p.name.endswith(".yaml")
    }


@cache
def load_prompt(name: str) -> JudgePrompt:
    """A built-in prompt by id or alias, or a YAML file path."""
    builtin = builtin_prompts()
    key = ALIASES.get(name, name)
    path = builtin.get(key) or Path(name).expanduser()
    if key not in builtin and not (path.suffix in (".yaml", ".yml") and path.is_file()):
        names = ", ".join(sorted({*builtin, *ALIASES}))
        raise HakariInputError(
            f"unknown judge prompt {name!r}; built-in: {names}, or a .yaml file",
            field="--judge-prompt",
        )
    raw = read_input(path, field="--judge-prompt")
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise HakariInputError(
            f"not a valid judge prompt: {one_line(exc, 200)}",
            file=str(path),
            field="--judge-prompt",
        ) from None
    if not isinstance(data, dict):
        raise HakariInputError(
            "not a valid judge prompt: expected a mapping of fields", file=str(path),
            field="--judge-prompt",
        )  # fmt: skip
    try:
        return JudgePrompt.model_validate({**data, "sha256": hashlib.sha256(raw).hexdigest()})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first.get("ctx", {}).get("error", first["msg"]))
        got = f" (got {first['input']!r:.40})" if where and first["type"] != "missing" else ""
        raise HakariInputError(
            f"not a valid judge prompt: {where + ': ' if where else ''}{message}{got}",
            file=str(path),
            field="--judge-prompt",
        ) from None

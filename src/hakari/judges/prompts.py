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
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from hakari._util.regex import compile_regex, regex_problem
from hakari.errors import HakariInputError

Verdict = Literal["csv_pair", "bracket", "free_text"]
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


class JudgePrompt(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    version: int
    source: str
    kind: Literal["pair", "single", "analysis"]
    verdict: Verdict
    scale: tuple[float, float]
    max_new_tokens: int
    template: str
    example: str | None = None
    completion_prefix: str = ""
    completion_max_new_tokens: int | None = None
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
    raw = path.read_bytes()
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
        return JudgePrompt.model_validate({**data, "sha256": hashlib.sha256(raw).hexdigest()})
    except (UnicodeDecodeError, yaml.YAMLError, ValidationError, TypeError, re.error) as exc:
        raise HakariInputError(
            f"not a valid judge prompt: {str(exc)[:300]}", file=str(path), field="--judge-prompt"
        ) from None

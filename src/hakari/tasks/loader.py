"""Finding, parsing and validating task files; checking them against their data.

Every problem becomes one `HakariInputError` naming the file, the template id and the
field, raised before any model is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import islice
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hakari._util.checks import did_you_mean
from hakari._util.infiles import read_input_text
from hakari._util.regex import LinearRegex, RegexError, compile_regex
from hakari.errors import HakariInputError
from hakari.tasks.data import Row, get_path, iter_rows, not_utf8_message
from hakari.tasks.extract import extract_answer
from hakari.tasks.spec import INSTANCE_REF, LabelValue, TaskSpec, Template

BUILTIN_PACKAGE = "hakari.tasks.builtin"


@dataclass(frozen=True)
class Task:
    """A validated task spec and where it came from."""

    spec: TaskSpec
    path: Path
    family: str | None = None  # a member of a task family (`tasks/families.py`)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def task_dir(self) -> Path:
        return self.path.parent


def builtin_task_paths() -> dict[str, Path]:
    root = resources.files(BUILTIN_PACKAGE)
    paths = {}
    for entry in root.iterdir():
        if entry.name.endswith(".yaml"):
            paths[entry.name.removesuffix(".yaml")] = Path(str(entry))
    return dict(sorted(paths.items()))


def resolve_task_path(path_or_name: str | Path) -> Path:
    candidate = Path(path_or_name).expanduser()
    if candidate.suffix in (".yaml", ".yml") or candidate.exists():
        if not candidate.is_file():
            problem = "not a regular file" if candidate.exists() else "task file not found"
            raise HakariInputError(problem, file=str(candidate))
        return candidate
    builtin = builtin_task_paths()
    name = str(path_or_name)
    if name in builtin:
        return builtin[name]
    raise HakariInputError(
        f"unknown task {name!r}{did_you_mean(name, builtin)}: not a file and not a "
        f"built-in task (built-in: {', '.join(builtin) or 'none'})",
        field="--tasks",
    )


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (plain YAML keeps
    the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, list | dict):
                continue  # unhashable: the base class reports it
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _UniqueKeyLoader.construct_mapping
)


def load_task(path_or_name: str | Path) -> Task:
    """Load and validate a task by built-in name or YAML path."""
    path = resolve_task_path(path_or_name)
    raw = read_task_file(path)
    if "family" in raw:
        raise HakariInputError(
            "a task family: load it with hakari.tasks.families.load_tasks (--tasks FAMILY "
            "or FAMILY:MEMBER)",
            file=str(path),
            field="family",
        )
    return Task(spec=validated_spec(raw, path), path=path.resolve())


def read_task_file(path: Path) -> dict[str, Any]:
    """A task file's YAML mapping (one error naming the file otherwise)."""
    try:
        raw = yaml.load(read_input_text(path, encoding="utf-8-sig"), Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        raise HakariInputError(f"not valid YAML: {_yaml_problem(exc)}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise HakariInputError(not_utf8_message(path, exc), file=str(path)) from None
    except OSError as exc:
        raise HakariInputError(f"cannot read: {exc.strerror or exc}", file=str(path)) from exc
    if not isinstance(raw, dict):
        raise HakariInputError("a task file must be a YAML mapping", file=str(path))
    where = unencodable_text(raw)
    if where is not None:
        raise HakariInputError(
            "text that is not Unicode (a lone surrogate such as \\ud800, written as a YAML "
            "escape): no tokenizer can encode it",
            file=str(path),
            field=where,
        )
    return raw


def unencodable_text(value: Any, where: str = "") -> str | None:
    """The dotted path of the first string (key or value) in a YAML or JSON value that
    UTF-8 cannot encode (a lone surrogate: YAML's and JSON's `\\ud800` escapes make
    one), or None."""
    if isinstance(value, str):
        return None if _encodable(value) else where or "."
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
            path = f"{where}.{name}" if where else name
            if isinstance(key, str) and not _encodable(key):
                return path
            found = unencodable_text(item, path)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = unencodable_text(item, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validated_spec(raw: dict[str, Any], path: Path) -> TaskSpec:
    try:
        return TaskSpec.model_validate(raw)
    except ValidationError as exc:
        raise _describe_validation_error(exc, raw, path) from exc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error on one line: its problem and where (the library's own text spans
    several lines, with a copy of the offending line)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        return f"{exc.problem}{where}"
    return " ".join(str(exc).split())


def _describe_validation_error(exc: ValidationError, raw: dict, path: Path) -> HakariInputError:
    err = exc.errors()[0]
    loc = list(err["loc"])
    template_id = None
    if len(loc) >= 2 and loc[0] == "templates" and isinstance(loc[1], int):
        templates = raw.get("templates") or []
        if loc[1] < len(templates) and isinstance(templates[loc[1]], dict):
            template_id = str(templates[loc[1]].get("id", f"#{loc[1]}"))
    field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "unknown field"
    elif err["type"] == "missing":
        message = "required field is missing"
    more = len(exc.errors()) - 1
    if more:
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return HakariInputError(message, file=str(path), field=field or None, template=template_id)


def check_task_data(
    task: Task, *, data_dir: Path | None = None, split: str | None = None, sample: int = 50
) -> int:
    """Check the task against the first rows of its data; return how many rows there are
    at most in the sample (0 raises). Catches placeholders and fields not in the data and
    gold labels outside the label set, before any model is loaded."""
    spec = task.spec
    rows = list(
        islice(iter_rows(spec, split=split, data_dir=data_dir, task_dir=task.task_dir), sample)
    )
    if not rows:
        raise HakariInputError("the dataset is empty", file=str(task.path), field="data")
    for template in spec.templates:
        names = set(template.placeholders()) | template.instance_refs()
        for name in sorted(names):
            _check_field(task, rows[0], name, template.id)
    _check_field(task, rows[0], spec.target, None, is_target=True)
    if spec.answer_type == "label" and spec.labels:
        labels = {str(x) for x in spec.labels}
        for i, row in enumerate(rows):
            try:
                gold = get_path(row, spec.field_path(spec.target))
            except KeyError:
                raise HakariInputError(
                    f"the target {spec.target!r} is not in this row",
                    file=str(task.path),
                    field="target",
                    row=i,
                ) from None
            if str(gold) not in labels:
                raise HakariInputError(
                    f"row {i} has gold label {gold!r}, not in labels {spec.labels}",
                    file=str(task.path),
                    field="labels",
                )
    return len(rows)


def _check_field(
    task: Task, row: Row, name: str, template_id: str | None, *, is_target: bool = False
) -> None:
    dotted = task.spec.field_path(name)
    try:
        get_path(row, dotted)
    except KeyError:
        what = "target" if is_target else f"placeholder {{{name}}}"
        mapped = f" (mapped to {dotted!r})" if dotted != name else ""
        raise HakariInputError(
            f"{what}{mapped} is not a field of the data (fields: {', '.join(sorted(row))})",
            file=str(task.path),
            template=template_id,
            field="target" if is_target else "prompt",
        ) from None


def check_constraints(task: Task) -> None:
    """Every template regex must also work as a decoding constraint (llguidance's regex
    dialect differs from Python's: no look-arounds or back-references)."""
    from hakari.backends.constrained import validate_regex

    seen: set[str] = set()
    for template in task.spec.templates:
        if template.regex in seen:  # a prompt space's templates share a few regexes
            continue
        seen.add(template.regex)
        problem = validate_regex(INSTANCE_REF.sub("x", template.regex))
        if problem is not None:
            raise HakariInputError(
                f"regex {template.regex!r} cannot constrain decoding: {problem}",
                file=str(task.path),
                template=template.id,
                field="regex",
            )


def task_summary(task: Task) -> dict[str, Any]:
    spec = task.spec
    return {
        "name": spec.name,
        "language": spec.language,
        "n_templates": len(spec.templates),
        "answer_type": spec.answer_type,
        "metrics": list(spec.metrics),
        "description": spec.description,
        "path": str(task.path),
    }


def check_answer_keys(task: Task, templates: Sequence[Template], *, constrained: bool) -> None:
    """Every answer key of a label template must be reachable: an output that is exactly
    the key must be read as that key's label (greedy extraction searches the regex), and
    with constrained decoding the regex must match the whole key (else the model can never
    be made to say it). A template that cannot produce one of its answers scores that label
    as never predicted, silently; this finds it before any model loads.

    Keys with `{{field}}` references are checked per instance by the run's row pass
    (`check_rendered_answers`)."""
    spec = task.spec
    if spec.answer_type != "label":
        return
    checked: set[tuple[str, tuple[tuple[str, LabelValue], ...]]] = set()
    for template in templates:
        if template.answers is None or template.instance_refs():
            continue
        # a prompt space's templates share a few regexes and answer maps: each once
        key = (template.regex, tuple(template.answers.items()))
        if key not in checked:
            checked.add(key)
            _check_answers(task, template.id, template.regex, template.answers, constrained, None)


def check_rendered_answers(
    task: Task,
    template_id: str,
    regex: str,
    answers: dict[str, LabelValue] | None,
    row: int,
    *,
    constrained: bool,
) -> None:
    """`check_answer_keys` for one instance's answers (templates with `{{field}}` keys)."""
    if task.spec.answer_type == "label" and answers is not None:
        _check_answers(task, template_id, regex, answers, constrained, row)


def rendered_regex(task: Task, template_id: str, regex: str, row: int | None) -> LinearRegex:
    """A template's regex with one instance's `{{field}}` values filled in, compiled for
    the linear-time matcher (the values are escaped, but can make it too large)."""
    try:
        return compile_regex(regex)
    except RegexError as exc:
        raise HakariInputError(
            f"regex {regex!r} cannot be used: {exc}",
            file=str(task.path),
            template=template_id,
            field="regex",
            row=row,
        ) from None


def _check_answers(
    task: Task,
    template_id: str,
    regex: str,
    answers: dict[str, LabelValue],
    constrained: bool,
    row: int | None,
) -> None:
    pattern = rendered_regex(task, template_id, regex, row)
    for key, label in answers.items():
        got = extract_answer(task.spec, key, pattern, answers)
        if got.used_fallback or got.answer != label:
            read_as = "nothing (fallback)" if got.used_fallback else f"{got.matched!r}"
            problem = f"the output {key!r} is read as {read_as}"
        elif constrained and not pattern.fullmatch(key):
            problem = (
                "constrained decoding can never produce it (the regex does not match it whole)"
            )
        else:
            continue
        raise HakariInputError(
            f"answer {key!r} can never be produced by regex {regex!r}: {problem}",
            file=str(task.path),
            template=template_id,
            field="answers",
            row=row,
        )


def check_row_field(
    task: Task, row: Row, name: str, template_id: str | None, where: dict[str, Any]
) -> None:
    """A field a template reads (None: the target) is in the row, not null, and text
    that can be encoded; `where` names the file and row."""
    spec = task.spec
    dotted = spec.field_path(name)
    role = "the target" if template_id is None else f"{{{name}}}"
    mapped = f" (mapped to {dotted!r})" if dotted != name else ""
    field = "target" if template_id is None else dotted
    try:
        value = get_path(row, dotted)
    except KeyError:
        raise HakariInputError(
            f"{role}{mapped} is not in this row (its fields: {', '.join(sorted(map(str, row)))})",
            template=template_id,
            field=field,
            **where,
        ) from None
    if value is None:
        raise HakariInputError(
            f"{role}{mapped} is null", template=template_id, field=field, **where
        )
    if unencodable_text(value) is not None:  # a JSON "\ud800": no tokenizer encodes it
        raise HakariInputError(
            f"{role}{mapped} holds text that is not Unicode (a lone surrogate)",
            template=template_id,
            field=field,
            **where,
        )


def gold_problem(task: Task, value: Any, exc: Exception) -> str:
    """Why a row's gold cannot be read, in words."""
    spec = task.spec
    if spec.answer_type == "label":
        return f"gold {value!r} is not one of the labels {spec.labels}"
    if spec.answer_type == "number":
        return f"gold {value!r} is not a number"
    return f"gold {value!r} is not a string or a list of strings ({exc})"

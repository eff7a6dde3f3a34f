"""The pydantic base of the records hakari keeps in JSON files (results.json and the
statistics inside it): typed attributes for readers, the same bytes for the file.

The one decision a reader must know: **which keys a record writes.** A record built in
code writes every field, nulls included, except the fields its class lists in
`WRITTEN_WHEN_GIVEN` (written only when the code gave them, e.g. the interval settings
of an aggregate that had no bootstrap). A record read from a file (`from_json`,
`from_data`) writes exactly the keys the file had, in field order, then the keys this
version does not know (kept: `extra="allow"`). So a file of an older version, without
the keys added since, or of a newer one, with keys added later, is written back
unchanged, and "absent" (not recorded by the version that wrote it) stays apart from
null (recorded as "none").

Reading is strict (`strict=True`: a number written as a string, or a string where a
number belongs, is an error, not a conversion) and every error is one
`HakariInputError` naming the file and the field's path.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo

from hakari.errors import HakariInputError

_READ_KEY = "hakari.records"
_READ = {_READ_KEY: "read from a file"}


def read_from_file(info: ValidationInfo) -> bool:
    """Whether a validator runs on a record read from a file (`from_json`, `from_data`),
    not on one built or changed in code: for the checks of what a hand-edited or
    foreign file may hold that code builds in steps."""
    return isinstance(info.context, dict) and _READ_KEY in info.context


class Record(BaseModel):
    """A JSON record: see the module docstring for which keys it writes."""

    model_config = ConfigDict(
        extra="allow", use_attribute_docstrings=True, validate_assignment=True
    )

    WRITTEN_WHEN_GIVEN: ClassVar[frozenset[str]] = frozenset()
    """Fields written only when given (built in code) or present (read from a file)."""
    INVALID: ClassVar[str] = "invalid"
    """How a reading error begins, e.g. "not a hakari results.json"."""

    def model_post_init(self, context: Any, /) -> None:
        if not (isinstance(context, dict) and _READ_KEY in context):
            # built in code: every field counts as given, except the optional keys
            given = type(self).model_fields.keys() - self.WRITTEN_WHEN_GIVEN
            self.model_fields_set.update(given)

    def to_dict(self) -> dict[str, Any]:
        """The record as it is written to JSON (see the module docstring for the keys)."""
        return self.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str) -> Self:
        """Parse and validate JSON text read from `source` (named in the errors)."""
        try:
            return cls.model_validate_json(text, strict=True, context=_READ)
        except ValidationError as exc:
            raise input_error(exc, source, cls.INVALID) from None

    @classmethod
    def from_data(cls, data: Any, *, source: str) -> Self:
        """Validate data already parsed from the JSON file `source`."""
        try:
            return cls.model_validate(data, strict=True, context=_READ)
        except ValidationError as exc:
            raise input_error(exc, source, cls.INVALID) from None


def input_error(exc: ValidationError, source: str, invalid: str) -> HakariInputError:
    """The first problem of a validation error, as one line naming file and field path."""
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or None
    message = first["msg"]
    if first["type"] == "json_invalid":
        message = f"not valid JSON: {first.get('ctx', {}).get('error', message)}"
    elif first["type"] == "value_error":  # a validator's own words
        message = str(first.get("ctx", {}).get("error", message))
    elif where is not None and first["type"] != "missing":
        message = f"{message} (got {_shown(first['input'])})"
    return HakariInputError(f"{invalid}: {message}", file=source, field=where)


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"

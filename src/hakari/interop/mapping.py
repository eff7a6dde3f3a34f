"""Which of a source's task names are templates of which hakari task.

lm-eval, inspect_ai and Every Eval Ever have no template axis: a multi-prompt suite is a
set of tasks (NorEval's `noreval_*_p0` … `_p5`, a group whose subtasks are prompt
variants). The user says how to read them:

* `--templates PATTERN`: a pattern over the source's task names in which `{template}`
  (required) and `{task}` (optional) match any text without a `/`, the rest literally
  (`noreval_{task}_p{template}`); names that do not match are left out (said in a note);
  a pattern that matches no task at all is an error. Without `{task}` the hakari task is
  `--task` (else the pattern with `{template}` removed). A whole name is matched, and
  where it splits more than one way (`mmlu_high_school_psychology_p0` by
  `{task}_p{template}`) **the template is the shortest fit** (template ids are the short
  part: task `mmlu_high_school_psychology`, template `0`), and a note names every name
  that also had another split, so the reading is never silent.
* `--group NAME` (lm-eval): the group's subtasks are the templates of task NAME (or
  `--task`), each template named by its subtask.
* Neither: every source task is a task with one template named after it, unless `--task`
  is given: then every source task is a template of that task.

The pattern is matched with a compiled regular expression built here from literal parts
(`re.escape`): no user regex runs on untrusted text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from hakari.errors import HakariInputError

_SLOT = re.compile(r"\{(template|task)\}")


@dataclass(frozen=True)
class Mapped:
    task: str
    template: str


class TaskMapping:
    """Source task name -> (hakari task, template), or None when it is not one."""

    def __init__(
        self,
        pattern: str | None,
        task: str | None,
        groups: dict[str, list[str]] | None = None,
        group: str | None = None,
    ) -> None:
        self.pattern, self.task, self.group = pattern, task, group
        self.regex = _compile(pattern) if pattern is not None else None
        # the same pattern with the template taking the most text: a name it splits
        # otherwise is ambiguous (read the shortest-template way, and noted)
        self.longest = _compile(pattern, longest_template=True) if pattern is not None else None
        self.ambiguous: dict[str, tuple[Mapped, Mapped]] = {}
        self.members: set[str] | None = None
        if group is not None:
            members = (groups or {}).get(group)
            if members is None:
                known = ", ".join(sorted(groups or {})) or "none"
                raise HakariInputError(
                    f"no group {group!r} in the results files (groups: {known})", field="--group"
                )
            self.members = set(members)
        self.matched = False

    def __call__(self, name: str) -> Mapped | None:
        if self.members is not None:
            if name not in self.members:
                return None
            self.matched = True
            return Mapped(self.task or self.group or name, name)
        if self.regex is None:
            self.matched = True
            return Mapped(self.task, name) if self.task else Mapped(name, name)
        m = self.regex.fullmatch(name)
        if m is None:
            return None
        self.matched = True
        mapped = self._mapped(m)
        other = self._mapped(self.longest.fullmatch(name)) if self.longest else mapped
        if other != mapped:
            self.ambiguous[name] = (mapped, other)
        return mapped

    def _mapped(self, m: re.Match[str] | None) -> Mapped:
        assert m is not None  # both regexes match the same names
        groups = m.groupdict()
        task = groups.get("task") or self.task or _SLOT.sub("", self.pattern or "").strip("_-. ")
        return Mapped(task or m.string, groups["template"])

    def notes(self) -> list[str]:
        """The names the pattern splits more than one way, and how each was read."""
        if not self.ambiguous:
            return []
        shown = [
            f"{name} as task {a.task!r} template {a.template!r} (not {b.task!r} / {b.template!r})"
            for name, (a, b) in list(self.ambiguous.items())[:3]
        ]
        more = len(self.ambiguous) - len(shown)
        return [
            f"--templates {self.pattern!r} splits {len(self.ambiguous)} names more than one "
            f"way, read by the shortest template: {'; '.join(shown)}"
            + (f" and {more} more" if more > 0 else "")
            + " (write more literal text in the pattern to choose otherwise)"
        ]

    def check_matched(self, names: Iterable[str]) -> None:
        """A pattern or group that matched none of the source's tasks is an error."""
        if self.matched:
            return
        listed = sorted(set(names))
        shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
        option = "--group" if self.group is not None else "--templates"
        given = self.group if self.group is not None else self.pattern
        raise HakariInputError(
            f"{given!r} matches none of the source's tasks ({shown or 'none'})", field=option
        )


def _compile(pattern: str, *, longest_template: bool = False) -> re.Pattern[str]:
    """The pattern as a regex over whole names; `{template}` takes the least text it can
    (the task the most), or the most with `longest_template`."""
    parts, seen, end = [], set(), 0
    for m in _SLOT.finditer(pattern):
        parts.append(re.escape(pattern[end : m.start()]))
        name = m.group(1)
        if name in seen:
            raise HakariInputError(f"{{{name}}} appears twice in {pattern!r}", field="--templates")
        seen.add(name)
        short = (name == "template") != longest_template
        parts.append(f"(?P<{name}>[^/]+{'?' if short else ''})")
        end = m.end()
    parts.append(re.escape(pattern[end:]))
    if "template" not in seen:
        raise HakariInputError(f"{pattern!r} has no {{template}}", field="--templates")
    return re.compile("".join(parts))

"""Tiny HTML building blocks. Every string from outside hakari (model output, task text,
model and file names, numbers read from JSON) goes through `esc`; markup is only ever
made here from hakari's own constants."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from typing import Any


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def anchor(*parts: Any) -> str:
    """A stable id for a section from untrusted names: readable where it can be, unique
    by a short hash where the name has characters an id should not carry."""
    import hashlib

    raw = "--".join(str(p) for p in parts)
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", raw).strip("-")[:60]
    digest = hashlib.sha1(raw.encode()).hexdigest()[:6]
    return f"s-{slug}-{digest}"


def num(value: Any, digits: int = 3) -> str:
    if value is None or isinstance(value, bool):
        return "–"
    if isinstance(value, int | float):
        if value != value:  # NaN
            return "–"
        return f"{value:.{digits}f}".replace("-", "−")
    return esc(value)


def pct(value: Any) -> str:
    if not isinstance(value, int | float) or value != value:
        return "–"
    return f"{value:.0%}" if value in (0, 1) else f"{value:.1%}"


def ci(low: Any, high: Any, digits: int = 3) -> str:
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        return ""
    return f'<span class="ci">[{num(low, digits)}, {num(high, digits)}]</span>'


def table(
    header: Iterable[str],
    rows: Iterable[Iterable[str]],
    cls: str = "",
    caption: str = "",
    numeric_from: int = 1,
) -> str:
    """`header` and `rows` are already-escaped HTML fragments."""
    head = "".join(
        f'<th scope="col"{" class=n" if i >= numeric_from else ""}>{h}</th>'
        for i, h in enumerate(header)
    )
    body = []
    for row in rows:
        cells = "".join(
            f"<td{' class=n' if i >= numeric_from else ''}>{c}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    cap = f"<caption>{caption}</caption>" if caption else ""
    cls_attr = f' class="{cls}"' if cls else ""
    return (
        f"<div class=scroll><table{cls_attr}>{cap}<thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def definition_list(items: Mapping[str, Any]) -> str:
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items.items())
    return f"<dl class=kv>{rows}</dl>"

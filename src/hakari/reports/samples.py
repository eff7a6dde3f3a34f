"""The sample browser: for each task, the first N instances of every template, the
prompt once and every model × decoding's raw output, extracted answer, fallback flag and
verdict under it.

Filtering (by template, by correct / incorrect) is pure CSS: radio buttons that are
siblings of the sample list, and `:checked ~` rules. No script runs, so the page works
where mail clients and sandboxed viewers strip JavaScript, and no model output can ever
reach a script.
"""

from __future__ import annotations

from collections.abc import Sequence

from hakari.reports.inputs import SampleBlock
from hakari.reports.markup import esc

VERDICT = {True: ("ok", "✓ correct"), False: ("bad", "✗ incorrect"), None: ("na", "–")}


def _gold(gold: object) -> str:
    if isinstance(gold, list):
        return " | ".join(str(g) for g in gold)
    return "" if gold is None else str(gold)


def _block(block: SampleBlock, template_class: str) -> str:
    rows = []
    for r in block.rows:
        cls, verdict = VERDICT[r.correct]
        fallback = '<span class="flag">fallback</span>' if r.fallback else ""
        rows.append(
            f'<tr class="{cls}"><td><span class="model">{esc(r.model)}</span></td>'
            f"<td>{esc(r.decoding)}</td><td><pre class=out>{esc(r.output)}</pre></td>"
            f"<td><code>{esc(r.answer)}</code></td><td>{fallback}</td>"
            f'<td class="verdict">{verdict}</td></tr>'
        )
    return (
        f'<article class="blk {template_class}">'
        f"<header>template <code>{esc(block.template_id)}</code> · instance "
        f"{esc(block.index)} · gold <code class=gold>{esc(_gold(block.gold))}</code></header>"
        f"<pre class=prompt>{esc(block.prompt)}</pre>"
        "<table class=answers><thead><tr><th>model</th><th>decoding</th><th>raw output</th>"
        "<th>answer</th><th>fallback</th><th>verdict</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></article>"
    )


def _radio(group: str, ident: str, cls: str, label: str, checked: bool = False) -> str:
    mark = " checked" if checked else ""
    return (
        f'<input type=radio class="{cls}" name="{group}" id="{ident}"{mark}>'
        f'<label for="{ident}">{label}</label>'
    )


def sample_browser(
    box_id: str, blocks: Sequence[SampleBlock], template_order: Sequence[str], per_template: int
) -> str:
    """`box_id` must be a safe id (see `markup.anchor`)."""
    known = list(template_order) + sorted({b.template_id for b in blocks} - set(template_order))
    index = {t: i for i, t in enumerate(known)}
    ordered = sorted(blocks, key=lambda b: (index[b.template_id], b.index))
    parts = [
        '<span class="filter-name">show</span>',
        _radio(f"{box_id}-o", f"{box_id}-o-all", "o-all", "all", checked=True),
        _radio(f"{box_id}-o", f"{box_id}-o-ok", "o-ok", "correct"),
        _radio(f"{box_id}-o", f"{box_id}-o-bad", "o-bad", "incorrect"),
        '<br><span class="filter-name">template</span>',
        _radio(f"{box_id}-t", f"{box_id}-t-all", "t-all", "all", checked=True),
    ]
    present = [t for t in known if any(b.template_id == t for b in blocks)]
    for t in present:
        i = index[t]
        parts.append(_radio(f"{box_id}-t", f"{box_id}-t-{i}", f"t-{i}", f"<code>{esc(t)}</code>"))
    body = "".join(_block(b, f"t{index[b.template_id]}") for b in ordered)
    note = (
        f"<p class=note>First {per_template} instances of each template; every model and "
        "decoding that answered them. Correct = the extracted answer equals the gold label; "
        "QA: exact match after normalisation; numbers: within 0.5 of the gold.</p>"
    )
    return f'<div class="samplebox">{note}{"".join(parts)}<div class="blocks">{body}</div></div>'


def filter_css(max_templates: int) -> str:
    """The rules that make the radio buttons filter (one per template position)."""
    rules = [
        ".o-ok:checked~.blocks tr.bad,.o-ok:checked~.blocks tr.na,"
        ".o-bad:checked~.blocks tr.ok,.o-bad:checked~.blocks tr.na{display:none}",
        ".o-ok:checked~.blocks .blk:not(:has(tr.ok)),"
        ".o-bad:checked~.blocks .blk:not(:has(tr.bad)){display:none}",
    ]
    rules += [
        f".t-{i}:checked~.blocks .blk:not(.t{i}){{display:none}}" for i in range(max_templates)
    ]
    return "\n".join(rules)

"""Model labels for narrow tables: a model spec can be a whole folder path or a server URL,
which an 80-column summary cannot hold beside its numbers. A long spec gets a readable
label of at most the width there is (the served model's name, a folder's last parts, else
the spec's head and tail), unique among the run's models; the views print the full spec
beside every label that differs from it (`label_key`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

ELLIPSIS = "…"
MIN_WIDTH = 8  # narrower than this, a label says nothing: the table wraps instead


def _middle(text: str, width: int) -> str:
    """`text` in `width` characters: its head and its tail, the middle left out."""
    if len(text) <= width:
        return text
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + ELLIPSIS + text[len(text) - tail :]


def _tail_parts(path: str, width: int) -> str:
    """A path's last part, after as many parts before it as fit in `width` (then `…/`)."""
    parts = [p for p in path.split("/") if p]
    label = parts[-1] if parts else path
    if len(label) > width:
        return _middle(label, width)
    for part in reversed(parts[:-1]):
        if len(ELLIPSIS + "/" + part + "/" + label) > width:
            break
        label = part + "/" + label
    if len(label.split("/")) < len(parts):
        return ELLIPSIS + "/" + label
    return "/" + label if path.startswith("/") and len(label) < width else label


def short_label(spec: str, width: int) -> str:
    """`spec` in at most `width` characters, readable: an `openai:` spec by the model it
    serves, an `hf:` / `vllm:` spec or an adapter by its folder's (or hub id's) last parts,
    anything else by its head and tail."""
    width = max(width, MIN_WIDTH)
    if len(spec) <= width:
        return spec
    base, adapter_sep, adapter = spec.partition("+adapter:")
    kind, sep, body = base.partition(":")
    if adapter_sep:
        label = _tail_parts(adapter, width)
    elif sep and kind == "openai":  # the served model's name, without its org
        name = body.split("@", 1)[0]
        label = name if len(name) <= width else name.rsplit("/", 1)[-1]
    elif sep and kind in ("hf", "vllm"):  # a folder or a hub id, without its @revision
        label = _tail_parts(body.rpartition("@")[0] or body, width)
    else:
        label = spec
    return _middle(label, width)


def _from_difference(spec: str, start: int, width: int) -> str:
    """`spec` from just before `start` (where it differs from a look-alike) to its end,
    in `width` characters, the difference kept."""
    if len(spec) <= width:
        return spec
    begin = len(spec) - (width - 1)
    if begin <= start:
        return ELLIPSIS + spec[begin:]
    return ELLIPSIS + _middle(spec[start:], width - 1)


def _first_difference(texts: list[str]) -> int:
    """The first position where `texts` do not all have the same character."""
    shortest = min(map(len, texts))
    return next((i for i in range(shortest) if len({t[i] for t in texts}) > 1), shortest)


def model_labels(specs: Iterable[str], width: int) -> dict[str, str]:
    """A label of at most `width` characters for each spec, no two alike: specs whose
    labels would be alike are shown from where they differ (then numbered, if need be)."""
    specs = list(dict.fromkeys(specs))
    width = max(width, MIN_WIDTH)
    labels = {s: short_label(s, width) for s in specs}
    for label, count in Counter(labels.values()).items():
        if count > 1:
            alike = [s for s in specs if labels[s] == label]
            start = _first_difference(alike)
            for spec in alike:
                labels[spec] = _from_difference(spec, start, width)
    taken: set[str] = set()
    for i, spec in enumerate(specs):
        if labels[spec] in taken:
            mark = f"#{i + 1}"
            labels[spec] = _middle(spec, width - len(mark)) + mark
        taken.add(labels[spec])
    return labels


def label_key(labels: dict[str, str]) -> list[str]:
    """`label = spec` for every label that is not its spec."""
    return [f"{label} = {spec}" for spec, label in labels.items() if label != spec]

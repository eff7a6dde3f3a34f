"""The one validation layer for option values: small typed checks that either return the
value or raise `HakariInputError` naming the option (the CLI prints it as one line and
exits with code 2).

The one decision a reader must know: **a value is checked where its setting is defined,
not where it was typed.** The settings objects (`EvalOptions`, `ServingOptions`,
`BootstrapSettings`, `TrainSettings`, pfgen's bootstrap settings, judge prompt files) call
these checks in the functions every caller goes through (`evaluate`, `meta_evaluate`,
`plan_sweep`, ...), so the CLI and the Python entry points refuse the same values with
the same words, before any model loads or any heavy work starts. The CLI keeps typer for
what typer is good at: a value of the wrong type (`--alpha abc`).

Memory-sized options (`--n-boot`, `--bootstrap`, `--num-trials`: anything whose value
sizes an allocation) are checked with `fits_in_memory` against what the machine can give
now, before allocating. The rule: the estimate of the bytes the option's largest
allocation needs (each caller computes it beside the code that allocates) must not exceed
the memory available: `MemAvailable` of /proc/meminfo, lowered to what the cgroup still
allows (`memory.max` − `memory.current`, a container's limit) where one is set; on
systems without /proc, the free physical pages (`os.sysconf`). Where none can be read
the check passes (the allocation itself then decides).

Output files and folders are checked by the one output writer
(`hakari._util.atomic.check_output`, `check_output_folder`), which knows what it may
replace.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TypeVar

from hakari.errors import HakariInputError

T = TypeVar("T", bound=str)

_CGROUP = Path("/sys/fs/cgroup")


def integer(value: object, option: str, *, low: int | None = None, high: int | None = None) -> int:
    """`value` as an int within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise HakariInputError(f"must be an integer (got {value!r:.40})", field=option)
    if (low is not None and value < low) or (high is not None and value > high):
        raise HakariInputError(f"must be {_range(low, high)} (got {value})", field=option)
    return value


def optional_integer(
    value: object, option: str, *, low: int | None = None, high: int | None = None
) -> int | None:
    """None (the option's default) or an int within [low, high]."""
    return None if value is None else integer(value, option, low=low, high=high)


def seed(value: object, option: str = "--seed", *, high: int | None = None) -> int:
    """A random seed: an int ≥ 0 (numpy's generators take no negative seed)."""
    return integer(value, option, low=0, high=high)


def number(
    value: object,
    option: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """`value` as a finite float within its bounds (open bounds exclude the end)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HakariInputError(f"must be a number (got {value!r:.40})", field=option)
    x = float(value)
    below = low is not None and (x <= low if low_open else x < low)
    above = high is not None and (x >= high if high_open else x > high)
    if not math.isfinite(x) or below or above:
        bounds = _interval(low, high, low_open, high_open)
        raise HakariInputError(f"must be a finite number{bounds} (got {value})", field=option)
    return x


def probability(value: object, option: str, *, open_low: bool = False) -> float:
    """A share in [0, 1] ((0, 1] with `open_low`)."""
    return number(value, option, low=0.0, high=1.0, low_open=open_low)


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """` (did you mean X?)` for the closest of `choices` to a mistyped name (a task, a
    model, an option), or "" when none is close."""
    close = difflib.get_close_matches(value, [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def flag(value: object, option: str) -> bool:
    """A yes/no option: True or False, nothing that merely looks like one ("no", 1)."""
    if not isinstance(value, bool):
        raise HakariInputError(f"must be true or false (got {value!r:.40})", field=option)
    return value


def folder(value: object, option: str) -> Path | None:
    """A folder option as a `Path` (None or "": not given); anything but a path or its
    text is one line naming the option. Whether it exists is the caller's to say."""
    if value is None or value == "":
        return None
    if not isinstance(value, str | Path):
        raise HakariInputError(f"must be a folder path (got {value!r:.40})", field=option)
    return Path(value)


def choice(value: str, option: str, choices: Collection[T]) -> T:
    """`value` if it is one of `choices` (the error lists them)."""
    for known in choices:
        if value == known:
            return known
    listed = ", ".join(sorted(choices))
    hint = did_you_mean(value, [str(c) for c in choices])
    raise HakariInputError(f"unknown value {value!r:.60}{hint}; choose from {listed}", field=option)


MAX_BOOTSTRAP_REPLICATES = 1_000_000  # more buys no precision, only time and memory


def bootstrap_replicates(value: object, option: str, *, confidence: float = 0.95) -> int:
    """0 (no intervals) or enough replicates for a `confidence` interval to mean
    something: each tail beyond the interval must hold at least one replicate, so
    n ≥ 2 / (1 − confidence) (40 at 95 %). With fewer, a percentile "interval" is the
    smallest and largest replicate, or one replicate twice: zero width, and it can
    exclude its own estimate. At most `MAX_BOOTSTRAP_REPLICATES` (1,000,000 on a 4-row
    table held 1.8 GB for 20 s, with nothing gained)."""
    n = integer(value, option, low=0)
    if n > MAX_BOOTSTRAP_REPLICATES:
        raise HakariInputError(
            f"{n:,} bootstrap replicates is beyond the bound of {MAX_BOOTSTRAP_REPLICATES:,} "
            "(10,000 already fix a 95% interval's ends to about 0.2% of its width)",
            field=option,
        )
    least = min_bootstrap_replicates(confidence)
    if 0 < n < least:
        raise HakariInputError(
            f"{n} bootstrap replicates cannot give a {confidence:.0%} interval (at least "
            f"{least}, or 0 for no intervals)",
            field=option,
        )
    return n


def min_bootstrap_replicates(confidence: float = 0.95) -> int:
    """The fewest replicates with one beyond each end of a `confidence` interval."""
    return math.ceil(2 / (1 - confidence) - 1e-9)


def available_memory() -> int | None:
    """Bytes the machine can give a new allocation now (see the module docstring), or
    None where that cannot be read."""
    found = _meminfo_available()
    if found is None:
        try:
            found = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            found = None
    limit = _cgroup_headroom()
    if limit is not None:
        found = limit if found is None else min(found, limit)
    return found


def fits_in_memory(n_bytes: float, option: str, value: object, what: str) -> None:
    """Refuse `option value` when `what` would need `n_bytes` and the machine has less."""
    available = available_memory()
    if available is None or n_bytes <= available:
        return
    raise HakariInputError(
        f"{option} {value} needs about {_size(n_bytes)} of memory for {what}, and "
        f"{_size(available)} is available; lower {option}",
        field=option,
    )


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_headroom() -> int | None:
    """memory.max − memory.current of this process's cgroup (v2), when a limit is set."""
    try:
        relative = Path("/proc/self/cgroup").read_text(encoding="ascii").split("::", 1)[1].strip()
        group = _CGROUP / relative.lstrip("/")
        limit = (group / "memory.max").read_text(encoding="ascii").strip()
        if limit == "max":
            return None
        used = int((group / "memory.current").read_text(encoding="ascii"))
        return max(0, int(limit) - used)
    except (OSError, ValueError, IndexError):
        return None


def _range(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"an integer from {low} to {high}"
    if low is not None:
        return f"an integer ≥ {low}"
    return f"an integer ≤ {high}"


def _interval(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is None and high is None:
        return ""
    if low is not None and high is not None:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        return f" in {left}{low:g}, {high:g}{right}"
    if low is not None:
        return f" {'>' if low_open else '≥'} {low:g}"
    assert high is not None
    return f" {'<' if high_open else '≤'} {high:g}"


def _size(n_bytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n_bytes < 1024 or unit == "PiB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    raise AssertionError("unreachable")

"""The end of `.ci/run`: each part's wall time against its budget, the total against CI's
own budget, and the slowest tests of the JUnit record. A part over its budget is a
warning line, never a failure (the machine is noisy); headroom is what this shows.

    python scripts/ci_report.py TIMES.tsv [JUNIT.xml] [--slowest N]
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

CI_BUDGET_S = 45 * 60  # the goal; the hard limit is 90 minutes
HARD_LIMIT_S = 90 * 60


def parts(times: Path) -> list[tuple[str, int, int]]:
    """(name, seconds, budget) per line of `name<TAB>seconds<TAB>budget`."""
    rows = []
    for line in times.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
            rows.append((fields[0], int(fields[1]), int(fields[2])))
    return rows


def slowest(junit: Path, n: int) -> list[tuple[float, str]]:
    """The `n` slowest test cases of a JUnit XML record: (seconds, node id)."""
    cases = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        cases.append((float(case.get("time") or 0.0), name))
    return sorted(cases, reverse=True)[:n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("times", type=Path)
    parser.add_argument("junit", type=Path, nargs="?")
    parser.add_argument("--slowest", type=int, default=25)
    args = parser.parse_args(argv)
    rows = parts(args.times) if args.times.is_file() else []
    print("\nCI parts (wall seconds; 'beside' parts ran during the install):")
    print(f"  {'part':44} {'s':>6} {'budget':>7}")
    for name, seconds, budget in rows:
        flag = "  WARNING: over its budget" if seconds > budget else ""
        print(f"  {name:44} {seconds:6d} {budget:7d}{flag}")
    total = sum(s for name, s, _ in rows if "beside" not in name)
    print(f"  {'total (sequential parts)':44} {total:6d} {CI_BUDGET_S:7d}")
    if total > CI_BUDGET_S:
        print(f"WARNING: CI took {total} s, over its {CI_BUDGET_S} s goal "
              f"(the hard limit is {HARD_LIMIT_S} s)")  # fmt: skip
    if args.junit is not None and args.junit.is_file():
        print(f"\nthe {args.slowest} slowest tests (s, across both workers):")
        for seconds, name in slowest(args.junit, args.slowest):
            print(f"  {seconds:8.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

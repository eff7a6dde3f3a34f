"""Repository-wide pytest setup.

Tests never reach the network (there is none in CI): without the offline switches, a hub
lookup that cannot succeed retries for minutes before failing.

The suite runs on every usable CPU by default (pytest-xdist, at most `MAX_WORKERS`
workers, or `PYTEST_XDIST_AUTO_NUM_WORKERS`; `-n N` chooses, `-n 0` or `-p no:xdist` runs
it in one process with the same results). Each worker computes torch with one thread
(unless `OMP_NUM_THREADS` gives a usable count) and the passive OpenMP wait, so two
workers on two cores do not slow each other (the rules: `tests/helpers/workers.py`).
The tiers are the markers of pyproject.toml (one definition); the two that need a place
of their own are mapped to xdist groups here:
`vllm` (real engines of ~3 GB each: one test of a group at a time, and a session's shared
engine run made once; `vllm("servers")` is a second group that may run beside the first;
xdist hands out the groups with the most tests first, so the long vLLM chains start first)
and `exclusive` (a test that kills a process or reads a terminal: one at a time).
Tests that use an expensive shared fixture of their own are grouped by it (`GROUPED_FIXTURES`):
pfgen-bench's n-gram tables and the scores of the shipped trials are then made on one
worker once, not on each worker that gets one of their tests.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest
from tests.helpers.workers import default_workers, pin_worker_threads

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

GROUPED_MARKERS = ("vllm", "exclusive")
GROUPED_FIXTURES = {"shared_tables": "pfgen-tables"}  # fixture name: its group

if os.environ.get("PYTEST_XDIST_WORKER"):
    pin_worker_threads()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """`-n` defaults to the usable CPUs (1: no workers), with `--dist loadgroup` so that
    the grouped markers hold; before xdist's own hook reads the options."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    option = config.option
    if getattr(option, "numprocesses", None) is None and not option.collectonly:
        workers = default_workers()
        option.numprocesses = workers if workers > 1 else 0
    if getattr(option, "dist", "no") in ("no", "load") and option.numprocesses:
        option.dist = "loadgroup"


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    """The grouped markers as xdist groups, before xdist's own hook reads them; after it,
    in a worker, each group in its item's id where xdist's naming did not land."""
    if not config.pluginmanager.hasplugin("xdist"):  # -p no:xdist: one process, no groups
        return (yield)
    grouped: list[tuple[pytest.Item, str]] = []
    for item in items:
        group = _group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            grouped.append((item, group))
    result = yield
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for item, group in grouped:
            _name_group(item, group)
    return result


def _group_of(item: pytest.Item) -> str | None:
    for name in GROUPED_MARKERS:
        marker = item.get_closest_marker(name)
        if marker is not None:  # `vllm("servers")`: a group of its own, "vllm-servers"
            return "-".join([name, *marker.args])
    fixtures = getattr(item, "fixturenames", ())
    return next((g for f, g in GROUPED_FIXTURES.items() if f in fixtures), None)


def _name_group(item: pytest.Item, group: str) -> None:
    """The group as xdist's scheduler reads it: the node id's "@" suffix. xdist's worker
    hook writes it only where the worker was given `--dist loadgroup` (not when
    `pytest_cmdline_main` above chose it), and to `item._nodeid`, which pytest 9.2 no
    longer reads (its ids are structured `NodeId`s in `item._id`, with no public way to
    change one): without this, `loadgroup` schedules every test alone. The one place the
    suite reaches past pytest's public API (written for pytest 9.2 and pytest-xdist 3.8);
    tests/contracts/test_suite_groups.py runs a grouped suite and fails when it stops
    holding."""
    named = f"{item.nodeid}@{group}"
    if item.nodeid.endswith(f"@{group}"):
        return  # named already: xdist's own hook, on a pytest that reads `_nodeid`
    if hasattr(item, "_id"):  # pytest >= 9.2
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(named)
    else:  # pytest < 9.2 keeps the string xdist writes
        item._nodeid = named
    if item.nodeid != named:
        raise pytest.UsageError(
            f"xdist group {group!r} not in the id of {item.nodeid}: this pytest keeps node ids "
            "where the root conftest.py's _name_group (pytest 9.2, pytest-xdist 3.8) does not "
            "write"
        )

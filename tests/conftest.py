"""Shared pytest setup: print the figures the suites measured (build/results/*.json)."""

from __future__ import annotations

import json
import time

import pytest

from course import BUILD

SESSION_START = time.time()


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own hook, which names the groups of marked tests
def pytest_collection_modifyitems(config, items):
    """For `make test`'s parallel run (pytest-xdist, --dist loadgroup): the tests that share an expensive module
    fixture (a graded batch, a sandbox) stay on one worker, so it is made once; and the slow tests are handed
    out first, so that no long test starts while the other worker has nothing left to do."""
    for item in items:
        shared = sorted(name for name, defs in item._fixtureinfo.name2fixturedefs.items()
                        if defs and defs[-1].scope == "module" and name in SHARED_MODULE_FIXTURES)
        if shared and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}::{shared[0]}"))
        if getattr(config.option, "loadgroup", False):  # set in pytest-xdist's workers under --dist loadgroup
            name_group(item)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: otherwise in collection order


# Module fixtures that cost tens of seconds or more (one grading run of a whole batch, a sandbox's start).
SHARED_MODULE_FIXTURES = {"batch", "persistence", "sandbox"}


def name_group(item) -> None:
    """Give a test in an xdist_group the node id ``<id>@<group>`` that --dist loadgroup schedules by.

    pytest-xdist 3.8 does it by setting ``item._nodeid``, which pytest 9 no longer reads (its node ids live in
    ``item._id``): under pytest 9 the groups were silently ignored, and a chapter's notebook ran twice."""
    mark = item.get_closest_marker("xdist_group")
    if mark is None or "@" in item.nodeid.rsplit("]", 1)[-1]:
        return
    group = mark.args[0] if mark.args else mark.kwargs.get("name", "default")
    if hasattr(item, "_id"):
        from _pytest.nodeid import coerce_node_id
        item._id = coerce_node_id(f"{item.nodeid}@{group}")
    else:
        item._nodeid = f"{item.nodeid}@{group}"


def pytest_terminal_summary(terminalreporter):
    results = BUILD / "results"
    fresh = sorted(p for p in results.glob("*.json") if p.stat().st_mtime >= SESSION_START) if results.exists() else []
    if not fresh:
        return
    terminalreporter.section("measured figures (build/results/)")
    for path in fresh:
        figures = json.loads(path.read_text())
        terminalreporter.write_line(f"{path.stem}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))

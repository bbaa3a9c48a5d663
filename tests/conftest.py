"""Shared pytest setup: print the figures the suites measured (build/results/*.json)."""

from __future__ import annotations

import json
import time

from course import BUILD

SESSION_START = time.time()


def pytest_terminal_summary(terminalreporter):
    results = BUILD / "results"
    fresh = sorted(p for p in results.glob("*.json") if p.stat().st_mtime >= SESSION_START) if results.exists() else []
    if not fresh:
        return
    terminalreporter.section("measured figures (build/results/)")
    for path in fresh:
        figures = json.loads(path.read_text())
        terminalreporter.write_line(f"{path.stem}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))

"""Timing for the benchmarks: wall (and CPU) seconds of repeated runs, and their median and range.

A sibling module: the scripts run as ``python benchmarks/<name>.py``, which puts this folder on
``sys.path``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

__all__ = ["measure", "timed"]


def measure(run: Callable[[], object], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each of ``runs`` calls of ``run``."""
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def timed(run: Callable[[], object], runs: int) -> tuple[float, float, float]:
    """(median, min, max) wall seconds of ``runs`` calls of ``run``."""
    wall, _ = measure(run, runs)
    return statistics.median(wall), min(wall), max(wall)

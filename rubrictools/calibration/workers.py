"""Independent fits in worker processes: the ``n_jobs`` of cross-validation and tuning.

Jobs run on joblib's reusable process pool (loky): workers start once, importing the library
(about a second each), and stay for later calls until they have been idle for five minutes.
Each worker's BLAS runs on one thread (the workers already fill the cores; BLAS threads on top
of them oversubscribe the machine), and every calibration fit uses one BLAS thread anyway, so
results come back in the order the jobs were given and equal a serial run's exactly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["check_n_jobs", "run_jobs"]

T = TypeVar("T")


def check_n_jobs(n_jobs: int | None) -> int:
    """The number of worker processes ``n_jobs`` asks for: ``None`` or ``1``: none (run here);
    ``k > 1``: ``k``; ``-1``: one per CPU (``-2``: all but one, as in scikit-learn)."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero whole number or None (1: no worker processes), got {n_jobs!r}")
    cpus = os.cpu_count() or 1
    return n_jobs if n_jobs > 0 else max(1, cpus + 1 + n_jobs)


def run_jobs(
    fn: Callable[..., T],
    jobs: Sequence[tuple[Any, ...]],
    *,
    n_jobs: int | None,
    done: Callable[[], None] | None = None,
) -> list[T]:
    """``[fn(*job) for job in jobs]``, in up to ``n_jobs`` worker processes (see
    :func:`check_n_jobs`), in order; ``done()`` is called after each job's result arrives."""
    workers = min(check_n_jobs(n_jobs), len(jobs))
    if workers <= 1:
        results = []
        for job in jobs:
            results.append(fn(*job))
            if done is not None:
                done()
        return results
    from joblib import Parallel, delayed, parallel_config

    with parallel_config(backend="loky", inner_max_num_threads=1):
        ordered = Parallel(n_jobs=workers, return_as="generator")(delayed(fn)(*job) for job in jobs)
        results = []
        for result in ordered:
            results.append(result)
            if done is not None:
                done()
    return results

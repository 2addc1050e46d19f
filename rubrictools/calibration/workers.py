"""Independent fits in worker processes: the ``n_jobs`` of cross-validation and tuning.

Jobs run on joblib's reusable process pool (loky): workers start once, importing the library
(about a second each), and stay for later calls until they have been idle for five minutes
(about 140 MB each; ``joblib.externals.loky.get_reusable_executor().shutdown()`` ends them now).
Each worker's BLAS runs on one thread (the workers already fill the cores; BLAS threads on top
of them oversubscribe the machine), and every calibration fit uses one BLAS thread anyway, so
results come back in the order the jobs were given and equal a serial run's exactly.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["check_n_jobs", "run_jobs"]

T = TypeVar("T")


def _usable_cpus() -> int:
    """CPUs this process may use (CPU affinity and container limits counted, as joblib counts them)."""
    from joblib import cpu_count

    return max(1, int(cpu_count()))


def check_n_jobs(n_jobs: int | None, *, stacklevel: int = 2) -> int:
    """The number of worker processes ``n_jobs`` asks for: ``None`` or ``1``: none (run here);
    ``k > 1``: ``k``, at most one per usable CPU (more would only slow the fits down: said in a
    warning, pointing ``stacklevel`` frames up); ``-1``: one per usable CPU, ``-2``: all but one,
    down to ``-(CPUs)``: one."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool):
        raise TypeError(f"n_jobs must be an int or None, got {n_jobs!r}")
    try:
        count = operator.index(n_jobs)  # an int of any kind (numpy's too), not 2.0 or "2"
    except TypeError:
        raise TypeError(f"n_jobs must be an int or None, got {type(n_jobs).__name__} {n_jobs!r}") from None
    if count == 1:
        return 1
    cpus = _usable_cpus()
    if count == 0 or count < -cpus:
        raise ValueError(
            f"n_jobs must be None, a count of worker processes >= 1, or -1 (one per CPU) down to -{cpus} "
            f"(this machine has {cpus} usable CPU{'s' if cpus > 1 else ''}); got {count}"
        )
    if count > cpus:
        warnings.warn(
            f"n_jobs={count} but {cpus} usable CPU{'s' if cpus > 1 else ''}: using {cpus} worker processes "
            "(more than one per CPU only slows the fits down)",
            UserWarning,
            stacklevel=stacklevel + 1,
        )
        return cpus
    return count if count > 0 else cpus + 1 + count


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

"""`width_curve`: how wide the interval is with n human labels, classical vs PPI vs naive."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from rubrictools.metrics import with_ci_level
from rubrictools.metrics.resampling import check_resampling
from rubrictools.ppi import core
from rubrictools.ppi.inputs import Target, aligned
from rubrictools.progress import progress_bar
from rubrictools.rubric import Rubric
from rubrictools.stack import user_stacklevel

__all__ = ["width_curve"]


def width_curve(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    target: Target = "met_rate",
    judge: str | None = None,
    label: str | None = None,
    prediction: str | None = None,
    criterion: str | None = None,
    ns: Sequence[int] = (25, 50, 100, 200),
    reps: int = 100,
    ci: float = 0.95,
    seed: int = 0,
    progress: bool = True,
) -> pl.DataFrame:
    """Interval width against the number of human labels, over random label subsets.

    Only items with a human label take part, so the full-human value (the mean over all of
    them) is known: for each ``n`` in ``ns``, ``reps`` times, ``n`` of them keep their labels
    and the rest count as unlabelled; the classical (human-only) estimate, PPI++
    (:func:`~rubrictools.ppi_estimate`) and the naive judge-only mean are computed. Returns per
    (criterion, n, method) the median interval width, the median estimate, ``covers``: the
    share of subsets whose interval holds the full-human value, and ``full_value``. The naive
    estimate does not depend on ``n``; its gap to ``full_value`` is the judge's bias.
    ``progress`` shows a progress bar (one step per criterion and ``n``).

    ``ci``, ``seed``: the interval level; its seed (``0`` by default: identical calls give
    identical intervals; ``None`` draws afresh).
    """
    check_resampling(ci=ci, seed=seed)
    ns = _check_ns(ns)
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ValueError(f"reps must be an int >= 1 (label subsets per n), got {reps!r}")
    data = aligned(
        verdicts,
        human,
        rubric,
        target=target,
        by_criterion=True,
        judge=judge,
        label=label,
        prediction=prediction,
        weights=None,
        stratify=None,
    ).filter(pl.col("y").is_not_null())
    if criterion is not None:
        data = data.filter(pl.col("__group") == criterion)
        if data.height == 0:
            raise ValueError(f"criterion={criterion!r} has no item with both a verdict and a human label")
    _check_sizes(data, ns)  # before any resampling
    rng = np.random.default_rng(seed)
    rows = []
    bar = progress_bar(data["__group"].n_unique() * len(ns), enabled=progress, desc="width curve", unit="n")
    for (group,), part in data.group_by("__group", maintain_order=True):
        y_all, f_all = part["y"].to_numpy(), part["f"].to_numpy()
        full = float(y_all.mean())
        nv = core.naive(f_all, ci=ci)
        for n in ns:
            if bar is not None:
                bar.update(1)
            if n >= y_all.size:  # said once, after the loop
                continue
            found: dict[str, list[tuple[float, float, bool]]] = {"classical": [], "ppi": []}
            for _ in range(reps):
                idx = rng.permutation(y_all.size)
                lab, rest = idx[:n], idx[n:]
                for name, est in (
                    ("classical", core.classical(y_all[lab], ci=ci)),
                    ("ppi", core.ppi(y_all[lab], f_all[lab], f_all[rest], ci=ci)),
                ):
                    found[name].append((est.ci_high - est.ci_low, est.estimate, est.ci_low <= full <= est.ci_high))
            for name, got in found.items():
                w, e, c = (np.array(x) for x in zip(*got, strict=True))
                rows.append((group, n, name, float(np.median(w)), float(np.median(e)), float(c.mean()), full))
            covers = float(nv.ci_low <= full <= nv.ci_high)
            rows.append((group, n, "naive", nv.ci_high - nv.ci_low, nv.estimate, covers, full))
    if bar is not None:
        bar.close()
    schema = ["criterion", "n", "method", "width", "estimate", "covers", "full_value"]
    return with_ci_level(pl.DataFrame(rows, schema=schema, orient="row"), ci, after="width")


def _check_ns(ns: Any) -> list[int]:
    """``ns`` as a list of ints >= 10 (a PPI interval needs some labels), refused otherwise."""
    if isinstance(ns, (str, bytes)) or not isinstance(ns, Sequence) or not ns:
        raise ValueError(f"ns must be a non-empty sequence of ints (numbers of labels to try), got {ns!r}")
    bad = [n for n in ns if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 10]
    if bad:
        raise ValueError(f"ns must hold ints of at least 10 (numbers of labels to try); these are not: {bad}")
    return [int(n) for n in ns]


def _check_sizes(data: pl.DataFrame, ns: list[int]) -> None:
    """Refuse when no n fits any criterion (each n must be below its number of labelled items, which
    leaves labelled items over to stand in as the unlabelled ones); say which n a criterion skips."""
    sizes = data.group_by("__group", maintain_order=True).len()
    if not any(n < k for _, k in sizes.iter_rows() for n in ns):
        held = ", ".join(f"{g!r}: {k}" for g, k in sizes.head(5).iter_rows())
        raise ValueError(
            f"no n in {ns} is below the number of labelled items ({held or 'none'}); each n must leave "
            "labelled items over to stand in as the unlabelled ones"
        )
    short = [(g, k, [n for n in ns if n >= k]) for g, k in sizes.iter_rows() if any(n >= k for n in ns)]
    if short:
        where = "; ".join(f"{g!r} ({k} labelled): n={skipped}" for g, k, skipped in short[:5])
        warnings.warn(
            f"width_curve left out n at or above a criterion's number of labelled items: {where}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )

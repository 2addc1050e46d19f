"""`choose_to_label`: which items people should label, with the probabilities that keep
:func:`~rubrictools.ppi_estimate` unbiased (active inference, Zrnic & Candès 2024)."""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
import polars as pl

from rubrictools.frames import to_polars
from rubrictools.stack import user_stacklevel

__all__ = ["choose_to_label", "uncertainty"]


def uncertainty(verdicts: Any) -> pl.DataFrame:
    """Per item, how unsure the judges are, in [0, 1]: ``1 - p(top label)`` from a
    ``distribution`` column when present, else the share of judges that disagree with the most
    common verdict; averaged over criteria."""
    v = to_polars(verdicts, name="verdicts").filter(pl.col("verdict").is_not_null())
    if "judge" in v.columns:
        v = v.filter(pl.col("judge") != "ensemble")
    if "distribution" in v.columns and v["distribution"].null_count() < v.height:
        top = pl.col("distribution").list.eval(pl.element().struct.field("prob")).list.max()
        per = v.filter(pl.col("distribution").is_not_null()).select("id", (1 - top).alias("u"))
    elif "judge" in v.columns and v["judge"].n_unique() > 1:
        counts = v.group_by("id", "criterion", "verdict").agg(pl.len().alias("k"))
        per = counts.group_by("id", "criterion").agg((1 - pl.col("k").max() / pl.col("k").sum()).alias("u"))
    else:
        raise ValueError(
            "uncertainty needs the judge's label distribution (grade(..., distribution=True)) or several judges"
        )
    return per.group_by("id", maintain_order=True).agg(pl.col("u").mean().alias("uncertainty"))


def _probabilities(u: np.ndarray, k: int, floor: float) -> np.ndarray:
    """Inclusion probabilities summing to ``k``: a ``floor`` share spread evenly (bounding the
    weights 1 / pi), the rest in proportion to uncertainty; capped at 1 and re-spread."""
    n = u.size
    share = u / u.sum() if u.sum() > 0 else np.full(n, 1.0 / n)
    pi = k * ((1 - floor) * share + floor / n)
    for _ in range(n):
        over = pi > 1
        if not over.any():
            break
        spare = (pi[over] - 1).sum()
        pi[over] = 1.0
        free = ~over & (pi < 1)
        pi[free] += spare * pi[free] / pi[free].sum()
    return np.minimum(pi, 1.0)


def choose_to_label(
    verdicts: Any,
    k: int,
    *,
    strategy: Literal["uncertainty", "random"] = "uncertainty",
    floor: float = 0.2,
    seed: int = 0,
) -> pl.DataFrame:
    """Items to send to people, most uncertain first, each with its inclusion probability ``pi``.

    Put ``pi`` beside the human labels and call ``ppi_estimate(..., weights="pi")``: the
    estimate stays unbiased, and its interval narrows when the judge's doubt points at its
    mistakes.

    Parameters
    ----------
    verdicts
        A verdict table of the ``N`` items. ``"uncertainty"`` needs a ``distribution`` column
        (``grade(..., distribution=True)``) or several judges.
    k
        How many items to label (between 1 and ``N``): exactly ``k`` with ``"random"``, about
        ``k`` on average with ``"uncertainty"``.
    strategy
        ``"uncertainty"`` (default): each item is drawn independently with probability
        ``pi_i = k ((1 - floor) u_i / sum(u) + floor / N)`` (capped at 1), ``u`` from
        :func:`uncertainty`, so about ``k`` items come back (the number varies, and can be 0
        with a small ``k``: a warning says so) and the unsure ones more often. ``"random"``: a
        simple random sample of exactly ``k`` items, ``pi = k / N``.
    floor
        The share of the probability spread evenly over all items (in (0, 1], default 0.2):
        it keeps every item reachable and bounds the weights ``1 / pi``.
    seed
        Seed of the draw (``0`` by default: identical calls choose the same items).

    Returns
    -------
    polars.DataFrame
        The chosen items, ``id, pi, uncertainty``, most uncertain first (``uncertainty`` null
        with ``"random"``).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> v = pl.DataFrame({"id": [1, 1, 2, 2, 3, 3], "criterion": "c", "judge": ["a", "b"] * 3,
    ...                   "verdict": ["MET", "UNMET", "MET", "MET", "UNMET", "UNMET"]})
    >>> rt.choose_to_label(v, 1, strategy="random", seed=1).columns
    ['id', 'pi', 'uncertainty']
    """
    if strategy not in ("uncertainty", "random"):
        raise ValueError(f"strategy must be 'uncertainty' or 'random'; got {strategy!r}")
    if not 0 < floor <= 1:
        raise ValueError(f"floor must be in (0, 1], got {floor!r}")
    v = to_polars(verdicts, name="verdicts")
    if strategy == "random":
        ids = v.select(pl.col("id").unique(maintain_order=True))
        items = ids.with_columns(pl.lit(None, dtype=pl.Float64).alias("uncertainty"))
    else:
        items = uncertainty(v)
    n = items.height
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the number of items ({n}); got {k}")
    rng = np.random.default_rng(seed)
    if strategy == "random":
        pick = np.zeros(n, dtype=bool)
        pick[rng.choice(n, size=k, replace=False)] = True
        pi = np.full(n, k / n)
    else:
        pi = _probabilities(items["uncertainty"].to_numpy().astype(float), k, floor)
        pick = rng.random(n) < pi
        if not pick.any():
            none = float(np.prod(1.0 - pi))
            warnings.warn(
                f"choose_to_label: the draw chose no item (each of the {n} is drawn on its own; the chance of none "
                f"is {none:.1%} at k={k}): draw again with another seed, a larger k, or strategy='random'",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
    out = items.with_columns(pl.Series("pi", pi)).filter(pl.Series(pick))
    return out.select("id", "pi", "uncertainty").sort("uncertainty", descending=True, nulls_last=True)

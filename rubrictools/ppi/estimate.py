"""`ppi_estimate`: what people would say, from a judge on every item and people on a few."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import polars as pl

from rubrictools.deprecation import adapted, renamed
from rubrictools.metrics import with_ci_level
from rubrictools.metrics.resampling import check_resampling
from rubrictools.ppi import core
from rubrictools.ppi.inputs import Target, aligned, single_group
from rubrictools.rubric import Rubric

__all__ = ["ppi_estimate"]

_MIN_LABELLED = 10


def _bootstrap(
    y: np.ndarray, f: np.ndarray, f_u: np.ndarray, lam: float, ci: float, n_resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Percentile interval of the PPI estimate at fixed ``lam``, resampling each set apart."""
    i = rng.integers(0, y.size, size=(n_resamples, y.size))
    j = rng.integers(0, f_u.size, size=(n_resamples, f_u.size))
    theta = lam * f_u[j].mean(axis=1) + (y[i] - lam * f[i]).mean(axis=1)
    lo, hi = np.percentile(theta, [100 * (1 - ci) / 2, 100 * (1 + ci) / 2])
    return float(lo), float(hi)


def _groups(group: pl.Series) -> list[tuple[Any, np.ndarray | slice]]:
    """Each group's value and row positions, groups in order of first appearance (one polars group-by)."""
    if single_group(group) and group.len():
        return [(group[0], slice(None))]  # one group: its rows are all rows, as views
    at = group.to_frame("g").with_row_index("row").group_by("g", maintain_order=True).agg("row")
    return [(value, rows.to_numpy()) for value, rows in zip(at["g"], at["row"], strict=True)]


def _columns(part: pl.DataFrame) -> dict[str, np.ndarray]:
    """The arrays the estimates need: ``y`` (NaN where unlabelled), ``f``, ``labelled`` and ``pi``."""
    cols = {"y": part["y"].to_numpy(), "f": part["f"].to_numpy(), "labelled": part["y"].is_not_null().to_numpy()}
    if "pi" in part.columns:
        cols["pi"] = part["pi"].fill_null(1.0).to_numpy()
    return cols


def _one(
    name: str,
    cols: dict[str, np.ndarray],
    lam: float | None,
    ci: float,
    method: str,
    n_resamples: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """The estimates of one group (or stratum): PPI, classical and naive."""
    labelled, y_all, all_f = cols["labelled"], cols["y"], cols["f"]
    y, f = y_all[labelled], all_f[labelled]
    if y.size < _MIN_LABELLED:
        raise ValueError(
            f"{name}: {y.size} labelled item(s); prediction-powered inference needs at least {_MIN_LABELLED}"
        )
    if np.ptp(all_f) == 0:
        raise ValueError(f"{name}: the judge gives every item the same value ({all_f[0]:g}); it carries no information")
    if "pi" in cols:
        pi = cols["pi"]
        if np.any(labelled & ~(pi > 0)) or np.any(pi > 1):
            raise ValueError(f"{name}: inclusion probabilities must be in (0, 1]")
        est = core.ipw(np.where(labelled, y_all, 0.0), all_f, labelled, pi, lam=lam, ci=ci)
        n_u = all_f.size
    else:
        f_u = all_f[~labelled]
        if f_u.size == 0:
            raise ValueError(f"{name}: every graded item is labelled; there is nothing for the judge to add")
        est = core.ppi(y, f, f_u, lam=lam, ci=ci)
        n_u = f_u.size
        if method == "bootstrap":
            lo, hi = _bootstrap(y, f, f_u, est.lam, ci, n_resamples, rng)
            est = core.Estimate(est.estimate, est.se, lo, hi, est.lam)
    cl = core.classical(y, ci=ci)
    nv = core.naive(all_f, ci=ci)
    return {
        "estimate": est.estimate,
        "ci_low": est.ci_low,
        "ci_high": est.ci_high,
        "se": est.se,
        "lam": est.lam,
        "n_labeled": int(y.size),
        "n_unlabeled": int(n_u),
        "classical": cl.estimate,
        "classical_ci_low": cl.ci_low,
        "classical_ci_high": cl.ci_high,
        "classical_se": cl.se,
        "naive": nv.estimate,
        "naive_ci_low": nv.ci_low,
        "naive_ci_high": nv.ci_high,
        "naive_se": nv.se,
    }


def _combine(rows: list[dict[str, Any]], sizes: np.ndarray, ci: float) -> dict[str, Any]:
    """Stratified estimate: stratum estimates weighted by their share of all items."""
    w = sizes / sizes.sum()
    out: dict[str, Any] = {}
    for kind in ("", "classical_", "naive_"):
        key = kind.rstrip("_") or "estimate"
        theta = float(np.dot(w, [r[key] for r in rows]))
        est = core.interval(theta, float(np.sqrt(np.dot(w**2, [r[f"{kind}se"] ** 2 for r in rows]))), ci)
        out.update({key: est.estimate, f"{kind}ci_low": est.ci_low, f"{kind}ci_high": est.ci_high, f"{kind}se": est.se})
    out["lam"] = float("nan")
    out["n_labeled"] = sum(r["n_labeled"] for r in rows)
    out["n_unlabeled"] = sum(r["n_unlabeled"] for r in rows)
    return out


@adapted(renamed(n_boot="n_resamples"))
def ppi_estimate(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    target: Target = "met_rate",
    by: Literal["criterion"] | None = "criterion",
    judge: str | None = None,
    label: str | None = None,
    prediction: str | None = None,
    lam: float | None = None,
    ci: float = 0.95,
    method: Literal["clt", "bootstrap"] = "clt",
    weights: str | None = None,
    stratify: str | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pl.DataFrame:
    """The human-scale value of a quantity from judge verdicts on all items and human labels on some.

    Prediction-powered inference (PPI; Angelopoulos et al., *Science* 2023) with PPI++ power
    tuning (Angelopoulos, Duchi & Zrnic 2023): with ``y`` the human values on the ``n``
    labelled items, ``f`` the judge's predictions there and ``f_u`` on the ``N`` other graded
    items,

        estimate = lam * mean(f_u) + mean(y - lam * f)
        SE = sqrt(lam^2 var(f_u) / N + var(y - lam * f) / n)

    ``lam=None`` picks the variance-minimising value (clipped to [0, 1]), ``1.0`` is plain PPI,
    ``0.0`` the classical estimate. The result is unbiased for what *people* would say whatever
    the judge's bias; the interval is narrower than the human-only one when the judge is
    informative. Formulas as in ``ppi_py.ppi_mean_ci`` (:mod:`rubrictools.ppi.core`).

    **Assumption.** Which items got human labels must not depend on the labels: a uniform
    random sample of the graded items, or a sample with known inclusion probabilities given in
    the ``weights`` column of ``human`` (e.g. from :func:`choose_to_label`), which switches to
    the inverse-probability estimator of active inference (Zrnic & Candès 2024) over all items.
    Labelling the items that looked interesting, or the first 100 rows of a sorted file,
    breaks it.

    Parameters
    ----------
    verdicts, human
        A verdict table (``id, criterion, verdict``; one judge, or ``judge=``) and human labels
        (``id, criterion, label[, rater]``; several raters of an item are averaged). Items with
        a human label are the labelled set; the other graded items are the unlabelled set.
    target
        ``"met_rate"`` (share of MET), ``"label_share"`` (share of ``label``), ``"mean"`` (the
        labels as numbers, e.g. 1-5 ratings; ``prediction=`` may name a numeric verdict column
        such as an expected value), or ``"score"`` (the rubric score per item, ``rubric=``).
    by
        ``"criterion"``: one estimate per criterion; ``None``: all criteria pooled.
    method
        ``"clt"`` (normal interval) or ``"bootstrap"`` (percentile, resampling the labelled and
        unlabelled sets apart at the chosen ``lam``).
    ci, n_resamples, seed
        The interval level (written to the ``ci_level`` column); with ``method="bootstrap"``,
        the resamples and their seed (``0`` by default: identical calls give identical intervals).
    stratify
        A column of ``verdicts``: estimates per stratum, combined weighted by stratum size.

    Returns one row per group: ``estimate, ci_low, ci_high, se, lam, n_labeled, n_unlabeled``, the
    classical (human-only) ``classical*`` on the same labelled items and the naive judge-only
    ``naive*`` (whose interval ignores the judge's bias), and ``width_ratio`` (PPI width /
    classical width).

    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.random(500) < 0.4
    >>> judge = np.where(rng.random(500) < 0.8, truth, rng.random(500) < 0.5)
    >>> verdicts = pl.DataFrame({"id": range(500), "criterion": "c", "verdict": np.where(judge, "MET", "UNMET")})
    >>> human = pl.DataFrame({"id": range(0, 500, 5), "criterion": "c",
    ...                       "label": np.where(truth[::5], "MET", "UNMET")})
    >>> t = ppi_estimate(verdicts, human)
    >>> bool(t["width_ratio"][0] < 1)
    True
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed)
    if method not in ("clt", "bootstrap") or (method == "bootstrap" and weights):
        raise ValueError("method must be 'clt' or 'bootstrap' (bootstrap is not offered with weights=)")
    if lam is not None and not 0 <= lam <= 1:
        raise ValueError(f"lam must be in [0, 1] or None, got {lam!r}")
    if by not in ("criterion", None):
        raise ValueError(f"by must be 'criterion' or None, got {by!r}")
    data = aligned(
        verdicts,
        human,
        rubric,
        target=target,
        by_criterion=by == "criterion",
        judge=judge,
        label=label,
        prediction=prediction,
        weights=weights,
        stratify=stratify,
    )
    rng = np.random.default_rng(seed)
    rows = []
    cols = _columns(data)
    for group, at in _groups(data["__group"]):
        if stratify:
            strata = list(data[at].group_by("stratum", maintain_order=True))
            parts = [_one(str(group), _columns(s), lam, ci, method, n_resamples, rng) for _, s in strata]
            row = _combine(parts, np.array([s.height for _, s in strata], dtype=float), ci)
        else:
            row = _one(str(group), {k: v[at] for k, v in cols.items()}, lam, ci, method, n_resamples, rng)
        rows.append({"group": group, "target": target, **row})
    out = pl.DataFrame(rows).with_columns(
        ((pl.col("ci_high") - pl.col("ci_low")) / (pl.col("classical_ci_high") - pl.col("classical_ci_low"))).alias(
            "width_ratio"
        )
    )
    out = with_ci_level(out, ci)
    return out.rename({"group": "criterion"}) if by == "criterion" or target == "score" else out.drop("group")

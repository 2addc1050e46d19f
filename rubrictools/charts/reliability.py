"""The reliability diagram: how often a judge's answers come out right against how confident it was."""

from __future__ import annotations

import warnings
from numbers import Real
from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.charts.base import alt_module as _alt
from rubrictools.charts.base import check_title, rate_axis
from rubrictools.charts.base import values as _values
from rubrictools.metrics.probability import brier_score, expected_calibration_error, reliability_table
from rubrictools.palette import JUDGE, REFERENCE
from rubrictools.stack import user_stacklevel

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = ["reliability"]


def reliability(
    y_true: Any,
    y_prob: Any,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    title: str | None = None,
    chance: float | None = None,
    chance_label: str = "chance",
) -> alt.LayerChart:
    """Reliability diagram: the share of items that came out true ("share correct") vs the mean
    confidence per bin (point size = items), the diagonal of perfect calibration, and the
    expected calibration error (ECE) and Brier score in the title. ``chance``: the share a
    baseline with no skill gets right, drawn as a dotted horizontal line, so a judge right barely
    more often (or less often) shows as such; ``chance_label`` names it in the subtitle. A blind
    guess among ``k`` options is ``1 / k``; when the labels are skewed, always answering the most
    common label is the stronger baseline (pass its share and, say,
    ``chance_label="always the commonest label"``).

    Example
    -------
    >>> import numpy as np, rubrictools as rt
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=200)
    >>> y = (rng.uniform(size=200) < p).astype(int)  # a calibrated judge
    >>> title = rt.charts.reliability(y, p, n_bins=5).to_dict()["title"]["text"]
    >>> title.startswith("Reliability: expected calibration error")
    True
    >>> rt.charts.reliability(y, p, n_bins=5, chance=0.25).to_dict()["title"]["subtitle"]
    'dashed: perfectly calibrated; dotted: chance (25%); point size: items in the bin'
    """
    check_title(title)
    if not isinstance(chance_label, str) or not chance_label.strip():
        raise ValueError(f"chance_label must be a non-empty string naming the baseline, got {chance_label!r}")
    if chance is None and chance_label != "chance":
        raise ValueError(f"chance_label={chance_label!r} names a baseline but chance= gives none: pass its share")
    if chance is not None:  # a number (numpy's and Fraction too, not a bool) strictly between 0 and 1
        if isinstance(chance, bool) or not isinstance(chance, Real) or not 0.0 < float(chance) < 1.0:
            raise ValueError(f"chance must be a number between 0 and 1 (1 / k for k options), got {chance!r}")
        chance = float(chance)

    alt = _alt()
    t = reliability_table(y_true, y_prob, n_bins=n_bins, strategy=strategy)  # type: ignore[arg-type]  # strategy is validated by the metric function
    ece = expected_calibration_error(y_true, y_prob, n_bins=n_bins, strategy=strategy)  # type: ignore[arg-type]  # strategy is validated by the metric function
    used = int(t["n"].sum())
    if used == 0:
        raise ValueError("no item has both an outcome and a probability: nothing to draw")
    brier = brier_score(y_true, y_prob)
    if (given := len(y_prob) if hasattr(y_prob, "__len__") else None) and (dropped := given - used):
        left_out = f"{dropped} of {given} items have no outcome or probability (NaN or null): left out of the chart"
        warnings.warn(left_out + ", its ECE and its Brier score", UserWarning, stacklevel=user_stacklevel())
    diag = (
        alt.Chart(alt.Data(values=[{"x": 0.0, "y": 0.0}, {"x": 1.0, "y": 1.0}]))
        .mark_line(strokeDash=[4, 4], color=REFERENCE)
        .encode(x="x:Q", y="y:Q")
    )
    # empty bins draw nothing (and put no "0 items" in the size legend); padding keeps a
    # point at 0 or 1 whole instead of half-clipped at the plot's edge (ticks stay 0-100%)
    unit = alt.Scale(domain=[0, 1])
    pts = alt.Chart(alt.Data(values=_values(t.filter(pl.col("n") > 0)))).encode(
        x=alt.X("mean_confidence:Q", title="judge confidence", scale=unit, axis=rate_axis()),
        y=alt.Y("accuracy:Q", title="share correct (observed)", scale=unit, axis=rate_axis()),
    )
    line = pts.mark_line(color=JUDGE)
    dots = pts.mark_circle(color=JUDGE).encode(
        size=alt.Size("n:Q", title="items", scale=alt.Scale(zero=False, range=[30, 400])),
        tooltip=[
            "lower:Q",
            "upper:Q",
            "n:Q",
            alt.Tooltip("mean_confidence:Q", format=".3f"),
            alt.Tooltip("accuracy:Q", format=".3f"),
        ],
    )
    default = f"Reliability: expected calibration error {ece:.3f}, Brier score {brier:.3f}"
    layers = [diag, line, dots]
    words = "dashed: perfectly calibrated; "
    if chance is not None:
        guess = alt.Chart(alt.Data(values=[{"y": chance}])).mark_rule(
            strokeDash=[2, 3], strokeWidth=2, color=REFERENCE
        )  # dotted, but visible
        layers.insert(1, guess.encode(y=alt.Y("y:Q", scale=unit)))
        words += f"dotted: {chance_label} ({100 * chance:.3g}%); "  # 25%, 33.3%, 0.4%: never rounded to 0% or 100%
    heading = alt.Title(title or default, subtitle=words + "point size: items in the bin")
    return alt.layer(*layers).properties(width=300, height=300, title=heading)

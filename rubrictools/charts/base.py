"""What every chart shares: lazy altair, a row cap on embedded data, the offline renderer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.frames import to_polars

__all__ = [
    "CHANCE_AT_ZERO",
    "MAX_ROWS",
    "alt_module",
    "chart_frame",
    "check_title",
    "interval_level",
    "interval_words",
    "offline",
    "rate_axis",
    "require_columns",
    "save",
    "values",
]

MAX_ROWS = 5000
"""Most rows a chart embeds: charts aggregate in polars first."""


def check_title(title: Any) -> None:
    """Refuse a chart title that is neither None (the chart's own), a non-blank string nor a list
    of non-blank strings (one per line), before altair's schema error names nothing a user passed.

    >>> check_title(123)
    Traceback (most recent call last):
    ...
    ValueError: title must be a non-blank string or a list of non-blank strings (one per line), got 123
    """
    lines = [title] if isinstance(title, str) else title
    ok = title is None or (
        isinstance(lines, (list, tuple)) and len(lines) > 0 and all(isinstance(x, str) for x in lines)
        and all(x.strip() for x in lines)
    )  # fmt: skip
    if not ok:
        raise ValueError(
            f"title must be a non-blank string or a list of non-blank strings (one per line), got {title!r}"
        )


def describe(spec: dict[str, Any]) -> str:
    """A chart's text description for screen readers: its titles, outermost first.

    >>> describe({"title": "Judge vs human", "hconcat": [{"mark": "bar", "title": {"text": "MET rate"}}]})
    'Chart: Judge vs human; MET rate'
    >>> describe({"mark": "line", "title": ["The lowest RMSE at each r", "grey: the floor"]})
    'Chart: The lowest RMSE at each r. grey: the floor'
    """
    found: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            t = node.get("title")
            t = t.get("text") if isinstance(t, dict) else t
            if isinstance(t, list):  # a title of several lines
                t = ". ".join(str(line) for line in t if line)
            is_view = "mark" in node or bool({"layer", "hconcat", "vconcat", "facet", "spec"} & set(node))
            if isinstance(t, str) and t and is_view:
                found.append(t)
            for key in ("layer", "hconcat", "vconcat", "spec"):
                child = node.get(key)
                for c in child if isinstance(child, list) else [child]:
                    visit(c)

    visit(spec)
    return "Chart: " + "; ".join(dict.fromkeys(found)) if found else "Chart (untitled)"


def _offline_renderer(spec: dict, **metadata: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A static SVG drawn by vl-convert (nbconvert HTML, GitHub and any viewer show it with no
    network) plus the Vega-Lite spec under the v5 mimetype that JupyterLab renders
    interactively with its own bundled vega. The SVG carries a text description (its titles)
    as its ``alt`` metadata, which the export template writes into the page."""
    bundle: dict[str, Any] = {"application/vnd.vegalite.v5+json": spec, "text/plain": "<altair chart>"}
    try:
        import vl_convert as vlc

        bundle["image/svg+xml"] = vlc.vegalite_to_svg(spec)
    except Exception:  # noqa: BLE001  # vl-convert missing or the spec cannot be drawn statically: JupyterLab still renders it
        pass
    return bundle, {"image/svg+xml": {"alt": describe(spec)}}


def offline() -> None:
    """Render altair charts without any network: interactive Vega-Lite in JupyterLab, with a
    static SVG (via ``vl-convert-python``) that nbconvert HTML and other viewers display.

    >>> offline()
    >>> import altair as alt
    >>> alt.renderers.active
    'rubrictools'
    """
    import altair as alt

    if "rubrictools" not in alt.renderers.names():
        alt.renderers.register("rubrictools", _offline_renderer)
    alt.renderers.enable("rubrictools")


def save(chart: Any, path: str | Path, *, scale: float = 2.0) -> Path:
    """Write ``chart`` to ``path`` offline, in the format its suffix names: ``.png`` drawn at
    ``scale`` times the chart's size (2 by default, so a 360-pixel-wide chart is a sharp
    720-pixel image rather than altair's 1x default), ``.svg``, ``.html`` or ``.json`` (the
    Vega-Lite spec). PNG and SVG need ``vl-convert-python`` (the ``[notebook]`` extra).

    >>> import tempfile, pathlib, altair as alt
    >>> c = alt.Chart(alt.Data(values=[{"x": 1}])).mark_point().encode(x="x:Q")
    >>> save(c, pathlib.Path(tempfile.mkdtemp()) / "c.json").suffix
    '.json'
    """
    import json

    path = Path(path)
    kind = path.suffix.lower()
    if not scale > 0:
        raise ValueError(f"save: scale must be > 0, got {scale!r}")
    if kind not in (".png", ".svg", ".html", ".json"):
        raise ValueError(f"save: {path.name!r}: the suffix must be .png, .svg, .html or .json")
    spec = chart.to_dict()
    if kind == ".json":
        path.write_text(json.dumps(spec, indent=2), encoding="utf-8")
    elif kind == ".html":
        chart.save(str(path), inline=True)
    else:
        try:
            import vl_convert as vlc
        except ImportError:
            raise ImportError(
                "save: PNG and SVG need vl-convert-python (pip install 'rubrictools[notebook]')"
            ) from None
        if kind == ".png":
            path.write_bytes(vlc.vegalite_to_png(spec, scale=scale))
        else:
            path.write_text(vlc.vegalite_to_svg(spec), encoding="utf-8")
    return path


def alt_module() -> Any:
    """altair, imported on first use (``import rubrictools`` stays fast)."""
    import altair as alt

    return alt


def values(df: pl.DataFrame) -> list[dict[str, Any]]:
    """The rows a chart embeds (an error beyond :data:`MAX_ROWS`: aggregate first)."""
    if df.height > MAX_ROWS:
        raise ValueError(f"refusing to embed {df.height} rows in a chart; aggregate first")
    return df.to_dicts()


def chart_frame(table: Any, *, name: str) -> pl.DataFrame:
    """``table`` as a polars DataFrame with at least one row: an empty table is a clear error
    naming the argument, never an empty chart or an ``IndexError`` from inside a chart.

    >>> chart_frame(pl.DataFrame({"x": []}), name="table")
    Traceback (most recent call last):
    ...
    ValueError: table: the table is empty (0 rows); there is nothing to chart
    """
    frame = to_polars(table, name=name)
    if frame.height == 0:
        raise ValueError(f"{name}: the table is empty (0 rows); there is nothing to chart")
    return frame


def require_columns(df: pl.DataFrame, cols: Sequence[str], what: str, hint: str = "") -> None:
    """A clear error naming the columns ``what`` needs and ``df`` lacks."""
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: missing column(s) {missing}{hint} (columns: {df.columns})")


def interval_level(table: pl.DataFrame) -> str:
    """The level of the intervals a table holds, as a chart says it: ``"95%"`` from its
    ``ci_level`` column (written by :func:`rubrictools.metrics.with_ci_level`); ``"90%/95%"``
    when rows differ; ``""`` for a table without the column (a chart then says "interval"
    without a level, rather than claim one).

    >>> interval_level(pl.DataFrame({"ci_level": [0.9, 0.9]})), interval_level(pl.DataFrame({"x": [1]}))
    ('90%', '')
    """
    if "ci_level" not in table.columns:
        return ""
    levels = sorted(table["ci_level"].drop_nulls().unique().to_list())
    return "/".join(f"{x:.0%}" if round(x * 100, 6).is_integer() else f"{x:.1%}" for x in levels)


def interval_words(table: pl.DataFrame, kind: str = "interval") -> str:
    """``"95% interval"`` (or ``kind`` alone when the table does not say its level; ``"no
    interval"`` when the table has none, e.g. computed with ``n_resamples=0``)."""
    lows = [c for c in table.columns if c.endswith("ci_low")]
    if lows and table.select(pl.all_horizontal(pl.col(c).is_null().all() for c in lows)).item():
        return "no interval"
    level = interval_level(table)
    return f"{level} {kind}" if level else kind


def rate_axis() -> Any:
    """An axis for a share in [0, 1]: ticks 0%-100% only (a padded domain prints no -10% or 110%)."""
    return alt_module().Axis(format="%", values=[0, 0.2, 0.4, 0.6, 0.8, 1.0])


CHANCE_AT_ZERO = {
    "cohen_kappa", "kappa_linear", "kappa_quadratic", "cohen_kappa_pairwise", "kappa_quadratic_pairwise",
    "fleiss_kappa", "gwet_ac1", "krippendorff_alpha", "icc2", "icc3", "spearman", "kendall", "pearson", "mcc",
}  # fmt: skip
"""Metrics whose 0 is chance agreement: a forest of them draws a reference line there."""

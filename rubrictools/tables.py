"""`table`: a result table a person reads at a glance, through Great Tables.

It sits on the package's lowest floor so that every result object's notebook display
(``_repr_html_``) formats its table the way :func:`rubrictools.charts.table` does.

Every rubrictools result is a polars DataFrame, and polars prints floats with six ragged
decimals, p-values as ``1.1347e-16``, rates as ``0.657143``, list columns as ``[],[]`` and
hides the middle rows of a long table. :func:`table` hands the frame to Great Tables (the
library behind polars' own ``DataFrame.style``) with formats chosen from the column names and
types, so the same table shows in live Jupyter and in exported HTML.
"""

from __future__ import annotations

import html
import importlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from rubrictools.frames import to_polars

__all__ = ["fixed_decimals", "format_p_value", "html_table", "signed_decimals", "table"]

_PVALUE = ("p_value", "pvalue", "p-value", "p")
_RATE_WORDS = ("rate", "share", "percent", "agreement", "accuracy", "coverage", "fraction")
_BOUNDS = ("ci_low", "ci_high", "low", "high")
_COUNT_WORDS = (
    "n", "count", "games", "wins", "losses", "ties", "labels", "calls", "tokens", "rows", "items", "points", "weight",
)  # fmt: skip


def fixed_decimals(expr: pl.Expr, decimals: int = 2) -> pl.Expr:
    """``expr`` as text with exactly ``decimals`` decimals (``0.5`` -> ``"0.50"``, ``1`` ->
    ``"1.00"``, ``-0.004`` -> ``"0.00"``), nulls and NaN kept null: chart labels that line up
    with the tables beside them, vectorised (no Python call per row).

    >>> pl.select(fixed_decimals(pl.lit(pl.Series([0.5, 1.0, -0.333, 0.6949, None])), 2)).to_series().to_list()
    ['0.50', '1.00', '-0.33', '0.69', None]
    """
    if decimals < 0:
        raise ValueError(f"decimals must be >= 0, got {decimals}")
    step = 10**decimals
    scaled = (expr.cast(pl.Float64) * step).round(0)
    ok = scaled.is_not_null() & scaled.is_finite()
    whole = scaled.abs().cast(pl.Int64, strict=False)
    sign = pl.when(scaled < 0).then(pl.lit("-")).otherwise(pl.lit(""))
    body = (whole // step).cast(pl.String)
    if decimals:
        body = pl.format("{}.{}", body, (whole % step).cast(pl.String).str.zfill(decimals))
    return pl.when(ok).then(pl.format("{}{}", sign, body)).otherwise(pl.lit(None, dtype=pl.String))


def signed_decimals(expr: pl.Expr, decimals: int = 2) -> pl.Expr:
    """``expr`` as :func:`fixed_decimals` writes it, always with a sign and a true minus
    (``"+0.34"``, ``"\u22120.12"``), as changes are printed; a value that rounds to 0 reads
    ``"+0.00"``; nulls stay null.

    >>> pl.select(signed_decimals(pl.lit(pl.Series([0.336, -0.8, -0.001, None])))).to_series().to_list()
    ['+0.34', '\u22120.80', '+0.00', None]
    """
    return pl.when(expr.round(decimals) < 0).then(pl.lit("\u2212")).otherwise(pl.lit("+")) + fixed_decimals(
        expr.abs(), decimals
    )


def format_p_value(p: float | None) -> str:
    """A p-value as a reader wants it: ``< 0.001`` below 0.001, three decimals otherwise.

    >>> format_p_value(1.1347e-16), format_p_value(0.0423), format_p_value(None)
    ('< 0.001', '0.042', '–')
    """
    if p is None or p != p:  # reason: p != p is the NaN test without importing math
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _single_tokens(values: pl.Series, longest: int = 40) -> bool:
    """A text column of identifiers: no value holds a space and none is longer than ``longest``."""
    if values.dtype != pl.String or values.null_count() == values.len():
        return False
    text = values.drop_nulls()
    widest = text.str.len_chars().max()
    return not bool(text.str.contains(r"\s").any()) and isinstance(widest, int) and widest <= longest


def _words(name: str) -> list[str]:
    return name.lower().replace("-", "_").replace(" ", "_").split("_")


def _is_rate(name: str, col: pl.Series) -> bool:
    """A float column in [0, 1] whose name has a rate word as a whole word (``met_rate``, ``win
    rate``; not ``rater`` or ``generated``)."""
    words = _words(name)
    if not any(w in words for w in _RATE_WORDS) or not col.dtype.is_float():
        return False
    values = col.drop_nulls().drop_nans()
    return values.len() > 0 and bool(values.min() >= 0) and bool(values.max() <= 1)  # type: ignore[operator]  # reason: a float column's min/max is a float


def _is_count(name: str, col: pl.Series) -> bool:
    """A float column that holds counts (``games``, ``n_labels``...): every value a whole number."""
    if not col.dtype.is_float() or not any(w in _COUNT_WORDS for w in _words(name)):
        return False
    values = col.drop_nulls().drop_nans()
    return values.len() > 0 and bool((values == values.round(0)).all())


# headers a reader knows at once; any other snake_case name is shown with spaces (``met_rate``
# -> ``met rate``); ``labels=`` and a later ``cols_label`` override both
_HEADERS = {
    "ci_low": "low",
    "ci_high": "high",
    "p_value": "p-value",
    "n_excluded": "excluded",
    "n_degenerate": "degenerate resamples",
    "ci_level": "interval level",
    "cost_usd": "cost (USD)",
    "latency_s": "latency (s)",
}


def _bounds_of(df: pl.DataFrame, rates: list[str]) -> list[str]:
    """The interval bounds of rate columns: a bound (``ci_low``, ``agreement_ci_high``, ``kappa
    low``) belongs to the nearest column before it that is not a bound, and is a percentage only
    when that estimate is (``accuracy, ci_low`` yes; ``kappa, kappa low`` no).

    >>> _bounds_of(pl.DataFrame({"accuracy": [0.5], "ci_low": [0.4], "kappa": [0.2], "kappa low": [0.1]}), ["accuracy"])
    ['ci_low']
    """
    out: list[str] = []
    estimate = None
    for c in df.columns:
        if c.endswith(_BOUNDS) and df[c].dtype.is_float():
            if estimate in rates and c not in rates:
                out.append(c)
        else:
            estimate = c
    return out


def _header(name: str) -> str:
    """The header shown for a column: ``ci_low`` -> ``low``, ``met_rate`` -> ``met rate``.

    >>> _header("ci_low"), _header("met_rate"), _header("n"), _header("Mean A")
    ('low', 'met rate', 'n', 'Mean A')
    """
    return _HEADERS.get(name, name.replace("_", " ") if name.islower() else name)


def _constant_columns(df: pl.DataFrame, subtitle: str | None) -> tuple[pl.DataFrame, str | None]:
    """A constant ``ci_level`` moved into the subtitle; an all-zero ``n_degenerate`` dropped."""
    if "n_degenerate" in df.columns and df.height and bool((df["n_degenerate"].fill_null(0) == 0).all()):
        df = df.drop("n_degenerate")
    if "ci_level" in df.columns and df.height and df["ci_level"].n_unique() == 1 and df["ci_level"][0] is not None:
        level = f"{float(df['ci_level'][0]):.0%} intervals"
        df = df.drop("ci_level")
        subtitle = level if subtitle is None else subtitle if level in subtitle else f"{subtitle} · {level}"
    return df, subtitle


def _decimals(col: pl.Series, decimals: int) -> int:
    """``decimals``, or more (up to 6) when the smallest non-zero value would read as 0.

    >>> _decimals(pl.Series([0.00023, 0.5]), 3), _decimals(pl.Series([1e-16, 0.5]), 3)
    (4, 3)
    """
    nonzero = col.drop_nulls().drop_nans().abs().filter(col.drop_nulls().drop_nans().abs() > 0)
    if nonzero.len() == 0:
        return decimals
    smallest = float(nonzero.min())  # type: ignore[arg-type]  # reason: a float column's min is a float
    if smallest >= 0.5 * 10**-decimals or smallest < 1e-6:  # below 1e-6: rounding noise, read as 0
        return decimals
    return min(6, max(decimals, math.ceil(-math.log10(smallest))))


def _readable(frame: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists, structs) as short text: ``a, b`` and ``key: value``, never ``[]``;
    booleans as ``yes``/``no``, not Python's ``True``/``False``."""
    out = []
    for name, dtype in frame.schema.items():
        c = pl.col(name)
        if isinstance(dtype, (pl.List, pl.Array)) and not dtype.inner.is_nested():
            out.append(c.cast(pl.List(pl.String)).list.join(", ").replace("", "–").alias(name))
        elif isinstance(dtype, (pl.List, pl.Array)):  # e.g. a conversation: each element as text
            out.append(c.map_elements(lambda v: "; ".join(map(str, v)) or "–", return_dtype=pl.String))
        elif isinstance(dtype, pl.Struct):
            out.append(c.map_elements(lambda s: "; ".join(f"{k}: {v}" for k, v in s.items()), return_dtype=pl.String))
        elif dtype == pl.Boolean:
            out.append(pl.when(c).then(pl.lit("yes")).when(~c).then(pl.lit("no")).alias(name))
        else:
            out.append(c)
    return frame.select(out)


def table(
    frame: Any,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    percent: Sequence[str] | None = None,
    decimals: int = 3,
    max_rows: int = 60,
    note: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Any:
    """A formatted Great Tables table of a result frame (polars or pandas).

    Formats by column:

    * p-values (``p_value``): ``< 0.001``, else three decimals, never wrapped;
    * rates (a float column in [0, 1] whose name says rate, share, agreement, accuracy...,
      or any column named in ``percent=``): percentages with one decimal, and the interval
      bounds beside them (``ci_low``/``ci_high``) too;
    * other floats: ``decimals`` decimals; integers, and float columns of whole numbers named
      as counts (``n``, ``games``, ``wins``, ``labels``...): thousands separators, no decimals;
    * text: left-aligned, never cut, identifiers (no spaces, at most 40 characters) never broken
      at a hyphen; lists and structs: ``a, b``; booleans: ``yes``/``no``;
      missing values: ``–``;
    * a float column whose smallest non-zero value would round to 0 at ``decimals`` (a bound of
      0.00023) gets the decimals it needs, up to 6;
    * a constant ``ci_level`` column is not shown: the subtitle says "95% intervals" instead, and
      an ``n_degenerate`` column of zeros is left out;
    * headers in words: ``ci_low``/``ci_high`` as ``low``/``high``, ``p_value`` as ``p-value``,
      ``n_excluded`` as ``excluded``, other snake_case names with spaces (``met rate``).

    A frame longer than ``max_rows`` shows its first ``max_rows`` rows and says how many are
    left out (none is hidden in the middle).

    Parameters
    ----------
    frame
        The table to show.
    title, subtitle
        Shown above the table.
    percent
        Columns to show as percentages, besides the rate columns found by name and range.
    decimals
        Decimals of the other float columns.
    max_rows
        The most rows shown.
    note
        A source note under the table.
    labels
        Column headers to show instead of the default ones, e.g. ``{"met_rate": "met"}``.

    Examples
    --------
    >>> import polars as pl, rubrictools as rt
    >>> t = pl.DataFrame({"criterion": ["polite"], "met_rate": [0.657143], "p_value": [1.1347e-16], "n": [12672]})
    >>> html = rt.charts.table(t).as_raw_html()
    >>> "65.7%" in html and "&lt; 0.001" in html and "12,672" in html
    True
    """
    gt = importlib.import_module("great_tables")
    df = to_polars(frame, name="frame")
    if max_rows < 1:
        raise ValueError(f"max_rows must be >= 1, got {max_rows}")
    for name, text in (("title", title), ("subtitle", subtitle), ("note", note)):
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise ValueError(f"{name} must be a non-blank string (or None for none), got {text!r}")
    for name, given in (("percent", percent), ("labels", labels)):
        unknown = sorted(set(given or ()) - set(df.columns))
        if unknown:
            raise ValueError(f"{name}= names columns not in the table: {unknown} (columns: {df.columns})")
    df, subtitle = _constant_columns(df, subtitle)
    left_out = max(0, df.height - max_rows)
    df = _readable(df.head(max_rows))
    rates = list(dict.fromkeys([*(percent or ()), *(c for c in df.columns if _is_rate(c, df[c]))]))
    rates += _bounds_of(df, rates)
    pvals = [c for c in df.columns if c.lower() in _PVALUE and df[c].dtype.is_float()]
    df = df.with_columns(pl.col(c).map_elements(format_p_value, return_dtype=pl.String) for c in pvals)
    counts = [c for c in df.columns if c not in rates and _is_count(c, df[c])]
    floats = [c for c, t in df.schema.items() if t.is_float() and c not in rates and c not in counts]
    ints = [c for c, t in df.schema.items() if t.is_integer() or c in counts]
    texts = [c for c, t in df.schema.items() if t == pl.String or c in pvals]
    out = gt.GT(df)
    if rates:
        out = out.fmt_percent(columns=rates, decimals=1)
    for c in floats:
        out = out.fmt_number(columns=c, decimals=_decimals(df[c], decimals))
    if ints:
        out = out.fmt_integer(columns=ints)
    if texts:
        out = out.cols_align(align="left", columns=[c for c in texts if c not in pvals])
    tokens = [c for c in texts if c not in pvals and _single_tokens(df[c])]
    if tokens:  # an identifier ("export-1", "gpt-4.1-mini") is never broken at its hyphen
        out = out.tab_style(style=gt.style.text(whitespace="nowrap"), locations=gt.loc.body(columns=tokens))
    if pvals:  # "< 0.001" and "p-value" on one line each, however narrow the column
        out = out.cols_align(align="right", columns=pvals).tab_style(
            style=gt.style.text(whitespace="nowrap"),
            locations=[gt.loc.body(columns=pvals), gt.loc.column_labels(columns=pvals)],
        )
    out = out.sub_missing(missing_text="–")
    headers = {c: _header(c) for c in df.columns if _header(c) != c}
    headers.update(labels or {})
    if headers:
        out = out.cols_label(cases=headers)
    if title is not None or subtitle is not None:
        out = out.tab_header(title=title, subtitle=subtitle)
    shown = f"{left_out:,} more row(s) not shown" if left_out else ("no rows" if df.height == 0 else None)
    notes = [n for n in (note, shown) if n]
    for n in notes:
        out = out.tab_source_note(n)
    return out


def html_table(frame: pl.DataFrame, *, title: str | None = None, note: str | None = None) -> str:
    """The HTML a result object shows in a notebook: :func:`table` when Great Tables is
    installed (the ``[notebook]`` extra), polars' own HTML otherwise.

    >>> import polars as pl
    >>> "<table" in html_table(pl.DataFrame({"x": [1]}), title="One row")
    True
    """
    try:
        importlib.import_module("great_tables")
    except ImportError:
        head = f"<b>{html.escape(title)}</b>" if title else ""
        tail = f"<small>{html.escape(note)}</small>" if note else ""
        return f"<div>{head}{frame._repr_html_()}{tail}</div>"
    return str(table(frame, title=title, note=note).as_raw_html())

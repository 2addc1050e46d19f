"""A static snapshot beside every live widget, for notebooks exported without a kernel.

A widget's display bundle carries the live view (``application/vnd.jupyter.widget-view+json``)
and a ``text/html`` snapshot of its current state: a title, its status line and the table it
holds. JupyterLab, Voila and VS Code draw the live widget; an exporter that cannot (nbconvert
HTML without stored widget state, ``nbconvert --to markdown``/``webpdf``, GitHub's viewer)
shows the snapshot instead of a blank cell. nbconvert's HTML export prefers the live view
(loaded from a CDN, which offline draws nothing); ``--config notebooks/offline_export.json``
puts ``text/html`` first in its output priority, so the snapshot shows.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import polars as pl

__all__ = ["SNAPSHOT_ROWS", "current_html", "html_table", "snapshot_bundle", "snapshot_html"]

SNAPSHOT_ROWS = 20
"""Rows of the widget's table shown in the snapshot."""


def html_table(frame: pl.DataFrame, *, max_chars: int, labels: dict[str, str] | None = None) -> str:
    """``frame`` as an HTML table, every cell escaped and, past ``max_chars``, cut with a visible
    "…" (untrusted text cannot add markup); ``labels`` renames column headers. Number columns
    are right-aligned, a float column with the same decimals on every row (see :func:`_column`).

    >>> html_table(pl.DataFrame({"a": ["<b>x</b>"]}), max_chars=50).count("&lt;b&gt;")
    1
    """
    numeric = {c for c, t in frame.schema.items() if t.is_numeric()}
    align = {c: "right" if c in numeric else "left" for c in frame.columns}
    head = "".join(
        f"<th style='text-align:{align[c]}'>{html.escape((labels or {}).get(c, c))}</th>" for c in frame.columns
    )
    columns = [_column(frame[c]) for c in frame.columns]
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td style='text-align:{align[c]};vertical-align:top'>{html.escape(_cut(text, max_chars))}</td>"
            for c, text in zip(frame.columns, texts, strict=True)
        )
        + "</tr>"
        for texts in zip(*columns, strict=True)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _column(values: pl.Series) -> list[str]:
    """A column's cell texts: floats with one number of decimals for the column (none when every
    value is whole, else 3: 0.667, not 0.6666666666666666), a minus sign (\u2212 0.333), a missing
    value as "–"; other values as text.

    >>> _column(pl.Series([2 / 3, -1 / 3, None, 3.0]))
    ['0.667', '\u22120.333', '–', '3.000']
    >>> _column(pl.Series([3.0, -1.0])), _column(pl.Series(["a", None]))
    (['3', '\u22121'], ['a', '–'])
    """
    if not values.dtype.is_float():
        return ["–" if v is None else str(v) for v in values.to_list()]
    finite = values.drop_nulls().drop_nans()
    decimals = 0 if finite.len() == 0 or bool((finite == finite.round(0)).all()) else 3
    out = []
    for v in values.to_list():
        if v is None:
            out.append("–")
            continue
        text = f"{v:.{decimals}f}" if v == v else "NaN"  # reason: v != v is NaN
        text = text.lstrip("-") if float(text) == 0 else text  # no "-0.000"
        out.append(text.replace("-", "\u2212", 1))
    return out


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def current_html(heading: str, text: str, choices: Sequence[str] = (), *, keys: str | None = None) -> str:
    """What a widget shows of the item in hand: a heading, the item's text in a box, the
    choices its buttons offer and ``keys`` (what its key box takes), every part escaped
    (untrusted text cannot add markup).

    >>> "[1: MET]" in current_html("polite", "<i>hi</i>", ["1: MET"], keys="1 or m")
    True
    """
    box = "white-space:pre-wrap;border:1px solid #ccc;padding:6px;max-height:16em;overflow:auto"
    buttons = " ".join(f"<code>[{html.escape(c)}]</code>" for c in choices)
    typed = f" · key box: type {html.escape(keys)}" if keys else ""
    return f"<p>{html.escape(heading)}</p><div style='{box}'>{html.escape(text)}</div>" + (
        f"<p>buttons: {buttons}{typed}</p>" if choices else ""
    )


def snapshot_html(
    title: str,
    status: str,
    table: pl.DataFrame | None,
    *,
    figure: str | None = None,
    current: str | None = None,
    labels: dict[str, str] | None = None,
) -> str:
    """The static HTML of a widget: title, status, ``current`` (the item in hand, from
    :func:`current_html`), ``figure`` (an SVG the widget drew itself, e.g. a chart rendered by
    vl-convert; never user text) and the first :data:`SNAPSHOT_ROWS` rows (``labels`` renames
    their headers).

    >>> "2 of 5" in snapshot_html("Labelling", "2 of 5", None)
    True
    """
    head = (
        f'<div class="rubrictools-widget-snapshot"><p><b>{html.escape(title)}</b> · {html.escape(status)}'
        " <i>(a snapshot: the live widget needs a running kernel)</i></p>"
    )
    if current:
        head += current
    if figure:
        head += f"<div>{figure}</div>"
    if table is None or table.height == 0:
        return head + ("</div>" if current else "<p>(no rows yet)</p></div>")
    shown = table.head(SNAPSHOT_ROWS)
    more = f"<p>... {table.height - shown.height} more rows</p>" if table.height > shown.height else ""
    shown, same = _constant_columns(shown, table)
    note = "".join(
        f"<p>every row's {html.escape((labels or {}).get(c, c))}: <i>{html.escape(_cut(v, 600))}</i></p>"
        for c, v in same.items()
    )
    return f"{head}{note}{html_table(shown, max_chars=600, labels=labels)}{more}</div>"


def _constant_columns(shown: pl.DataFrame, table: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """Text columns holding one value on every row of ``table`` (two rows or more), taken out of
    ``shown`` to be said once above it rather than repeated on every row.

    >>> t = pl.DataFrame({"id": ["a", "b"], "note": ["same", "same"]})
    >>> _constant_columns(t, t)[1]
    {'note': 'same'}
    """
    if table.height < 2 or shown.width < 2:
        return shown, {}
    text = [c for c, t in table.schema.items() if t == pl.String]
    same = {c: table[c][0] for c in text if table[c].null_count() == 0 and table[c].n_unique() == 1}
    same = dict(list(same.items())[: shown.width - 1])  # at least one column stays a table
    return shown.drop(list(same)), same


def snapshot_bundle(
    widget: Any,
    title: str,
    status: str,
    table: pl.DataFrame | None,
    *,
    figure: str | None = None,
    current: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``widget``'s own display bundle plus a ``text/html`` snapshot (:func:`snapshot_html`)."""
    bundle: dict[str, Any] = dict(widget._repr_mimebundle_())
    bundle["text/html"] = snapshot_html(title, status, table, figure=figure, current=current, labels=labels)
    return bundle

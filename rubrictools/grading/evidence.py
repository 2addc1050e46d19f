"""Evidence checks: is the passage a judge quoted really in the submission?"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from rubrictools.grading.options import OnUnsupported

__all__ = ["check_evidence"]

_QUOTE_CHARS = "\"'“”‘’«»`"


def _normalise_text(e: pl.Expr) -> pl.Expr:
    """Whitespace collapsed, typographic quotes and dashes made plain."""
    return (
        e.str.replace_all(r"[“”«»]", '"')
        .str.replace_all(r"[‘’]", "'")
        .str.replace_all(r"[–—]", "-")
        .str.replace_all(r"\s+", " ")
        .str.strip_chars()
    )


def check_evidence(df: pl.DataFrame, texts: Sequence[str], on_unsupported: OnUnsupported) -> pl.DataFrame:
    """Add ``evidence_ok``: the quote is in the graded text, exactly or after normalising
    whitespace and typographic quotes (null where no quote was asked). A verdict that claims
    something (MET, or above the lowest option) needs a quote; an empty quote is fine for the
    lowest outcome. With ``on_unsupported="downgrade"`` an unsupported claim falls to the
    criterion's lowest label and says so in its explanation."""
    if df.height == 0 or not df["__ev"].any():
        return df.with_columns(pl.lit(None, dtype=pl.Boolean).alias("evidence_ok"))
    rows = pl.DataFrame(
        {"__row": pl.Series(range(len(texts)), dtype=pl.Int64), "__text": pl.Series(list(texts), dtype=pl.String)}
    )
    df = df.join(rows, on="__row", how="left", maintain_order="left")
    quote = pl.col("evidence").str.strip_chars(f" \n\t{_QUOTE_CHARS}").str.strip_chars(".…").str.strip_chars()
    has_quote = quote.fill_null("").str.len_chars() > 0
    t = pl.col("__text").fill_null("")
    found = t.str.contains(quote, literal=True) | _normalise_text(t).str.contains(_normalise_text(quote), literal=True)
    ok = pl.when(~pl.col("__ev")).then(None).when(has_quote).then(found.fill_null(False)).otherwise(~pl.col("__needs"))
    df = df.with_columns(ok.alias("evidence_ok")).drop("__text")
    if on_unsupported == "downgrade":
        down = pl.col("__needs") & (pl.col("evidence_ok") == False)  # noqa: E712 - null stays null
        df = df.with_columns(
            pl.when(down)
            .then(
                pl.format(
                    "[downgraded from {}: the quoted evidence is not in the submission] {}",
                    pl.col("verdict"),
                    pl.col("explanation").fill_null(""),
                )
            )
            .otherwise(pl.col("explanation"))
            .alias("explanation"),
            pl.when(down).then(pl.col("__floor_label")).otherwise(pl.col("verdict")).alias("verdict"),
            pl.when(down).then(pl.col("__floor_value")).otherwise(pl.col("value")).alias("value"),
        )
    return df

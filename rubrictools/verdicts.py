"""The verdict table: the project's central data structure, defined once.

A verdict table is a polars DataFrame with one row per (submission, criterion[, judge]).

============== ========= ==============================================================
column         dtype     meaning
============== ========= ==============================================================
id             any       submission id (the user's id column, or a row-derived id)
criterion      String    criterion name (``"__holistic__"`` for a holistic score)
verdict        String    ``MET``/``UNMET``/``CANNOT_ASSESS`` or an option label; null on error
value          Float64   score fraction in [0, 1]; null for CANNOT_ASSESS/NA and errors
explanation    String    the judge's justification
error          String    null, or why there is no verdict (the row is then not a judgement)
judge          String    model name, ``"ensemble"`` for aggregated rows, ``"human"``...
weight         Float64   the criterion's weight (lets per-item rubrics be scored alone)
prompt_tokens  Int64     tokens sent (0 for cache hits' new spend is in ``cached``)
completion_... Int64     tokens received
cost_usd       Float64   price of the call, null when the model has no known price
cached         Boolean   answered from the response cache
attempts       Int64     HTTP attempts made for this row's call
latency_s      Float64   seconds the server had the call's requests (not its wait in our queue)
============== ========= ==============================================================

A row is *CANNOT_ASSESS* exactly when ``error`` is null and ``value`` is null, unless its
verdict is ``NOT_APPLICABLE`` (a conditional criterion a row does not meet: never scored).
Only ``id``, ``criterion`` and ``verdict`` are required to build one by hand;
:func:`validate_verdicts` fills in the rest from the rubric.

Example
-------
>>> import polars as pl, rubrictools as rt
>>> rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "x"}])
>>> v = rt.validate_verdicts(pl.DataFrame({"id": [1], "criterion": ["a"], "verdict": ["met"]}), rubric)
>>> v.select("verdict", "value").row(0)
('MET', 1.0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.frames import to_polars

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.rubric import Rubric

NOT_APPLICABLE = "NOT_APPLICABLE"
"""Verdict of a conditional criterion (``applies_when``) on a row that does not meet its
condition: no call is made and no scoring strategy counts it."""

__all__ = [
    "HOLISTIC",
    "NOT_APPLICABLE",
    "REQUIRED_COLUMNS",
    "VERDICT_SCHEMA",
    "empty_verdicts",
    "to_polars",
    "validate_verdicts",
]

HOLISTIC = "__holistic__"
"""Criterion name of a holistic (whole-rubric) score row."""

REQUIRED_COLUMNS: tuple[str, ...] = ("id", "criterion", "verdict")

VERDICT_SCHEMA: dict[str, pl.DataType | None] = {
    "id": None,  # keeps the user's id dtype
    "criterion": pl.String(),
    "verdict": pl.String(),
    "value": pl.Float64(),
    "explanation": pl.String(),
    "error": pl.String(),
    "judge": pl.String(),
    "weight": pl.Float64(),
    "prompt_tokens": pl.Int64(),
    "completion_tokens": pl.Int64(),
    "cost_usd": pl.Float64(),
    "cached": pl.Boolean(),
    "attempts": pl.Int64(),
    "latency_s": pl.Float64(),
}
"""Column name -> dtype of the columns every verdict table has (``None``: any dtype; ``id``
keeps the user's). :func:`rubrictools.grade` adds what it records of each call (e.g.
``error_kind``, ``raw_response``, ``cached_tokens``); :func:`validate_verdicts` needs only
``id, criterion, verdict``."""


def empty_verdicts(id_dtype: pl.DataType | None = None) -> pl.DataFrame:
    """An empty verdict table with the full schema (ids of ``id_dtype``, String by default)."""
    ids = id_dtype if id_dtype is not None else pl.String()
    schema = {k: (v if v is not None else ids) for k, v in VERDICT_SCHEMA.items()}
    return pl.DataFrame(schema=schema)


def _label_key(expr: pl.Expr) -> pl.Expr:
    return expr.str.replace_all(r"\s+", " ").str.strip_chars().str.to_lowercase()


def _numeric_labels(df: pl.DataFrame, numeric: list[Any]) -> pl.DataFrame:
    """Fill ``__label``/``__value`` of numeric criteria: the canonical number and its position
    in the range, null when the verdict is not a number of the scale."""
    spec = pl.DataFrame(
        {
            "criterion": [c.name for c in numeric],
            "__lo": [c.range.min for c in numeric],
            "__hi": [c.range.max for c in numeric],
            "__step": [c.range.step for c in numeric],
        },
        schema={"criterion": pl.String, "__lo": pl.Float64, "__hi": pl.Float64, "__step": pl.Float64},
    )
    df = df.join(spec, on="criterion", how="left", maintain_order="left")
    x = pl.col("verdict").str.strip_chars().cast(pl.Float64, strict=False)
    k = (x - pl.col("__lo")) / pl.col("__step")
    on_grid = pl.col("__step").is_null() | ((k - k.round()).abs() <= 1e-9 * pl.max_horizontal(k.abs(), pl.lit(1.0)))
    valid = x.is_not_null() & x.is_finite() & (x >= pl.col("__lo") - 1e-12) & (x <= pl.col("__hi") + 1e-12) & on_grid
    integral = (x == x.round()) & (x.abs() < 1e15)
    canon = pl.when(integral).then(x.cast(pl.Int64).cast(pl.String)).otherwise(x.cast(pl.String))
    unit = ((x - pl.col("__lo")) / (pl.col("__hi") - pl.col("__lo"))).clip(0.0, 1.0)
    is_num = pl.col("__lo").is_not_null()
    return df.with_columns(
        pl.when(is_num).then(pl.when(valid).then(canon)).otherwise(pl.col("__label")).alias("__label"),
        pl.when(is_num).then(pl.when(valid).then(unit)).otherwise(pl.col("__value")).alias("__value"),
    ).drop("__lo", "__hi", "__step")


def validate_verdicts(verdicts: Any, rubric: Rubric | None = None) -> pl.DataFrame:
    """Check a verdict table and complete it to the full schema.

    Parameters
    ----------
    verdicts
        A verdict table (polars or pandas): the required columns ``id, criterion, verdict``
        must exist; optional ones are added as nulls.
    rubric
        With a rubric, every criterion must belong to it, every non-error verdict must be an
        allowed label (case/space-insensitive; rewritten to its canonical spelling), and
        ``value``/``weight`` are (re)computed from the rubric. Without one (``None``),
        ``weight`` must be present, and ``value`` is derived for binary labels when missing.

    Returns
    -------
    polars.DataFrame
        The table with every column of :data:`VERDICT_SCHEMA`, plus ``worst_value`` (the
        score-minimising realisable fraction for the row's criterion).

    Raises
    ------
    ValueError
        Naming the offending rows.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> v = pl.DataFrame({"id": [1, 2], "criterion": "greets", "verdict": ["met", "UNMET"]})
    >>> rt.validate_verdicts(v, rubric).select("id", "verdict", "value", "weight").rows()
    [(1, 'MET', 1.0, 10.0), (2, 'UNMET', 0.0, 10.0)]
    >>> rt.validate_verdicts(v.with_columns(verdict=pl.lit("maybe")), rubric)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: verdict table: 2 row(s) have labels the rubric does not allow; first: id=1, ...
    """
    df = to_polars(verdicts, name="verdicts")
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"verdict table is missing required column(s) {missing}; it has {df.columns}")
    add = [
        pl.lit(None, dtype=dt).alias(c) for c, dt in VERDICT_SCHEMA.items() if dt is not None and c not in df.columns
    ]
    if add:
        df = df.with_columns(add)
    try:
        df = df.with_columns(
            [pl.col(c).cast(dt) for c, dt in VERDICT_SCHEMA.items() if dt is not None and df.schema[c] != dt]
        )
    except Exception as e:  # noqa: BLE001  # polars raises InvalidOperationError subclasses; re-raised as ValueError naming the column
        raise ValueError(f"verdict table has a column of the wrong type: {e}") from None
    if df["criterion"].null_count():
        raise ValueError("verdict table: 'criterion' must not be null")
    if df["id"].null_count():
        raise ValueError("verdict table: 'id' must not be null")
    ok = pl.col("error").is_null()
    df = df.with_columns(pl.when(ok).then(pl.col("verdict")).otherwise(None).alias("verdict"))

    if rubric is not None:
        labels = rubric.label_frame()
        holistic = pl.col("criterion") == HOLISTIC
        unknown = df.filter(
            ~holistic & ~pl.col("criterion").is_in(pl.Series(list(rubric.names), dtype=pl.String).implode())
        )
        if unknown.height:
            names = unknown["criterion"].unique(maintain_order=True).head(5).to_list()
            raise ValueError(f"verdict table: criteria {names} are not in the rubric {list(rubric.names)}")
        df = df.with_columns(_label_key(pl.col("verdict")).alias("__key")).join(
            labels.select(
                "criterion",
                pl.col("key").alias("__key"),
                pl.col("label").alias("__label"),
                pl.col("value").alias("__value"),
            ),
            on=["criterion", "__key"],
            how="left",
            maintain_order="left",
        )
        numeric = [c for c in rubric if c.range is not None]
        if numeric:
            df = _numeric_labels(df, numeric)
        inapplicable = pl.col("verdict").str.to_uppercase().str.strip_chars() == NOT_APPLICABLE
        df = df.with_columns(pl.when(inapplicable).then(pl.lit(NOT_APPLICABLE)).otherwise("__label").alias("__label"))
        bad = df.filter(ok & ~holistic & pl.col("verdict").is_not_null() & pl.col("__label").is_null())
        if bad.height:
            r = bad.row(0, named=True)
            rc = rubric[r["criterion"]]
            allowed: Any = list(rc.labels) if rc.range is None else f"a number from {rc.range.describe()}"
            raise ValueError(
                f"verdict table: {bad.height} row(s) have labels the rubric does not allow; first: "
                f"id={r['id']!r}, criterion={r['criterion']!r}, verdict={r['verdict']!r} (allowed: {allowed})"
            )
        missing_verdict = df.filter(ok & pl.col("verdict").is_null() & ~holistic)
        if missing_verdict.height:
            r = missing_verdict.row(0, named=True)
            raise ValueError(
                f"verdict table: {missing_verdict.height} row(s) have neither a verdict nor an error; "
                f"first: id={r['id']!r}, criterion={r['criterion']!r}"
            )
        crit_weight = {c.name: c.weight for c in rubric}
        worst = {c.name: c.worst_value for c in rubric}
        df = df.with_columns(
            pl.when(holistic).then(pl.col("verdict")).otherwise(pl.col("__label")).alias("verdict"),
            pl.when(holistic).then(pl.col("value")).when(ok).then(pl.col("__value")).otherwise(None).alias("value"),
            pl.when(holistic)
            .then(pl.lit(rubric.holistic_weight))
            .otherwise(pl.col("criterion").replace_strict(crit_weight, default=None, return_dtype=pl.Float64))
            .alias("weight"),
            pl.when(holistic)
            .then(0.0)
            .otherwise(pl.col("criterion").replace_strict(worst, default=None, return_dtype=pl.Float64))
            .alias("worst_value"),
        ).drop("__key", "__label", "__value")
    else:
        if df["weight"].null_count():
            raise ValueError(
                "verdict table: without a rubric every row needs a 'weight' (pass rubric= to take weights from it)"
            )
        key = _label_key(pl.col("verdict"))
        derived = pl.when(key == "met").then(1.0).when(key == "unmet").then(0.0).otherwise(None)
        df = df.with_columns(
            pl.when(~ok)
            .then(None)
            .when(pl.col("value").is_null())
            .then(derived)
            .otherwise(pl.col("value"))
            .alias("value"),
            pl.when(key.is_in(["met", "unmet", "cannot_assess"]))
            .then(key.str.to_uppercase())
            .otherwise(pl.col("verdict"))
            .alias("verdict"),
        )
        if "worst_value" not in df.columns:
            df = df.with_columns(pl.when(pl.col("weight") < 0).then(1.0).otherwise(0.0).alias("worst_value"))
    out_of_range = df.filter(pl.col("value").is_not_null() & ((pl.col("value") < 0) | (pl.col("value") > 1)))
    if out_of_range.height:
        r = out_of_range.row(0, named=True)
        raise ValueError(
            f"verdict table: value must be in [0, 1]; id={r['id']!r}, criterion={r['criterion']!r}, value={r['value']}"
        )
    return df

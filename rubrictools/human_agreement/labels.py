"""Labels of judges and humans on one scale: normalised keys, the rubric's label table, human frames."""

from __future__ import annotations

import math
import warnings
from typing import Any

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.human_agreement.catalog import NaMode
from rubrictools.rubric import NumericRange, Rubric, format_number, normalize_label
from rubrictools.stack import user_stacklevel
from rubrictools.verdicts import HOLISTIC

__all__ = [
    "check_ids",
    "check_known",
    "human_frame",
    "label_table",
    "mode_consensus",
    "verdict_frame",
    "warn_pooled_judges",
    "with_key",
]


_NA_TOKENS = ("cannot_assess", "cannot assess", "na", "n/a", "not applicable", "none")


def _key(expr: pl.Expr) -> pl.Expr:
    """Normalised label: numbers as canonical floats, text lower-cased with collapsed spaces."""
    s = expr.cast(pl.String)
    f = s.str.strip_chars().cast(pl.Float64, strict=False)
    text = s.str.replace_all(r"\s+", " ").str.strip_chars().str.to_lowercase()
    return pl.when(f.is_not_null()).then(f.cast(pl.String)).otherwise(text)


def with_key(df: pl.DataFrame, col: str, out: str) -> pl.DataFrame:
    """Add the normalised label of ``col`` as ``out``, computed once per distinct label."""
    if df.height == 0:
        return df.with_columns(_key(pl.col(col)).alias(out))
    uniq = df.select(pl.col(col).unique()).with_columns(_key(pl.col(col)).alias(out))
    return df.join(uniq, on=col, how="left", nulls_equal=True, maintain_order="left")


def _key_py(label: str) -> str:
    """:func:`_key` for one Python string (rubric option labels)."""

    try:
        return str(float(label.strip()))
    except ValueError:
        return normalize_label(label)


_LABEL_SCHEMA: dict[str, Any] = {
    "criterion": pl.String,
    "key": pl.String,
    "code": pl.Int64,
    "value": pl.Float64,
    "kind": pl.String,
    "n_classes": pl.Int64,
    "pos_code": pl.Int64,
    "classes": pl.List(pl.String),
}


_MAX_LEVELS = 41
"""Most levels a continuous numeric criterion is put on for kappa's weights (0.1 steps on 1-5):
pairwise kappas keep a levels x levels table per rater pair and submission."""


_Entry = tuple[str, float | None, str]
"""A label's normalised key, its number (None: NA) and how it is shown."""


def _numeric_entries(name: str | None, rng: NumericRange, keys: list[str | None]) -> list[_Entry]:
    """A numeric criterion's labels in order, as ``(key, number, shown)``: every point of a stepped
    range, else of the grid of ``min..max`` at the data's finest decimal (4.9 and 5: steps of 0.1),
    so kappa's weights count distances on the scale, observed or not; when that grid would pass
    :data:`_MAX_LEVELS`, the distinct numbers seen, with a warning that kappa then weighs ranks. A
    number off the grid or outside the range, or an NA token (a numeric verdict has none: scoring
    refuses it too), gets no entry, so :func:`check_known` refuses it."""
    if rng.points is not None:
        return [(str(float(p)), float(p), format_number(p)) for p in rng.points]  # keys as _key writes numbers
    found = sorted({float(k) for k in keys if k is not None and _is_number(k)})
    inside = [x for x in found if rng.min <= x <= rng.max]
    digits = next((d for d in range(4) if all(abs(x * 10**d - round(x * 10**d)) < 1e-9 for x in inside)), None)
    if digits is not None:
        lo, hi = math.floor(rng.min * 10**digits), math.ceil(rng.max * 10**digits)
        if hi - lo + 1 <= _MAX_LEVELS:
            grid = [round(i / 10**digits, digits) for i in range(lo, hi + 1)]
            return [(str(float(x)), float(x), format_number(x)) for x in grid if rng.min <= x <= rng.max]
    warnings.warn(
        f"criterion {name!r}: its numbers need more than {_MAX_LEVELS} levels on {rng.describe()}, so they are "
        "taken as the distinct values seen: a kappa weighs their ranks, not their distances, and exact-match "
        "figures (accuracy, percent agreement) count 4.9 against 5 as a miss; prefer icc2, mae or spearman there",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    return [(str(x), x, format_number(x)) for x in inside]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def label_table(rubric: Rubric | None, keys: pl.DataFrame, cannot_assess: NaMode) -> pl.DataFrame:
    """One row per (criterion, label key): integer code in ordinal order, value, kind.

    ``keys`` holds the distinct ``criterion, key`` pairs of the data (only needed without a
    rubric). NA keys get code ``n_classes`` under ``as_category``, the worst option's code
    under ``as_worst`` and a null code under ``exclude``.
    """
    rows: list[dict[str, Any]] = []

    def add(criterion: str | None, entries: list[tuple[str, float | None, str]], kind: str, worst: int | None) -> None:
        # entries: (key, value or None for NA, display label) in code order for non-NA
        real = [e for e in entries if e[1] is not None]
        k = len(real)
        classes = [e[2] for e in real]
        has_na = any(e[1] is None for e in entries)
        if cannot_assess == "as_category" and has_na:
            classes = [*classes, "NA"]
        pos = next((i for i, e in enumerate(real) if e[0] == "met"), None)
        for i, (key, value, _) in enumerate(real):
            rows.append(
                dict(
                    criterion=criterion,
                    key=key,
                    code=i,
                    value=value,
                    kind=kind,
                    n_classes=len(classes),
                    pos_code=pos,
                    classes=classes,
                )
            )
        for key, value, _ in entries:
            if value is None:
                code = k if cannot_assess == "as_category" else (worst if cannot_assess == "as_worst" else None)
                val = None if code is None or code >= k else real[code][1]
                rows.append(
                    dict(
                        criterion=criterion,
                        key=key,
                        code=code,
                        value=val,
                        kind=kind,
                        n_classes=len(classes),
                        pos_code=pos,
                        classes=classes,
                    )
                )

    if rubric is not None:
        unknown = set(keys["criterion"].unique().to_list()) - set(rubric.names) - {HOLISTIC}
        if unknown:
            raise ValueError(f"criteria {sorted(unknown)[:5]} are not in the rubric {list(rubric.names)}")
        for c in rubric:
            if c.range is not None:  # numeric: the range's grid, or the in-range numbers the data hold
                entries = _numeric_entries(c.name, c.range, keys.filter(pl.col("criterion") == c.name)["key"].to_list())
                add(c.name, entries, "ordinal", 0 if c.weight >= 0 else len(entries) - 1)
                continue
            if c.options is None:
                entries = [("unmet", 0.0, "UNMET"), ("met", 1.0, "MET"), ("cannot_assess", None, "CANNOT_ASSESS")]
                worst = 1 if c.weight < 0 else 0
            else:
                opts = [o for o in c.options if not o.na]
                if c.kind == "ordinal":
                    opts = sorted(opts, key=lambda o: o.value)
                entries = [(_key_py(o.label), o.value, o.label) for o in opts]
                entries += [(_key_py(o.label), None, o.label) for o in c.options if o.na]
                worst = next(i for i, o in enumerate(opts) if o.value == c.worst_value)
            add(c.name, entries, c.kind, worst)
    else:
        for crit, ks in keys.group_by("criterion", maintain_order=True).agg(pl.col("key").unique().sort()).iter_rows():
            ks = [k for k in ks if k is not None]
            real = [k for k in ks if k not in _NA_TOKENS]
            nas: list[tuple[str, float | None, str]] = [(k, None, k) for k in ks if k in _NA_TOKENS]
            if set(real) <= {"met", "unmet"}:
                entries = [("unmet", 0.0, "UNMET"), ("met", 1.0, "MET"), *nas]
                add(crit, entries, "binary", 0)
                continue
            nums = {}
            for k in real:
                try:
                    nums[k] = float(k)
                except ValueError:
                    break
            if len(nums) == len(real):
                order = sorted(real, key=lambda k: nums[k])
                add(crit, [*((k, nums[k], k) for k in order), *nas], "ordinal", 0)
            else:
                add(crit, [*((k, float(i), k) for i, k in enumerate(sorted(real))), *nas], "nominal", 0)
    if not rows:
        return pl.DataFrame(schema=_LABEL_SCHEMA)
    return pl.DataFrame(rows, schema=_LABEL_SCHEMA)


def check_known(df: pl.DataFrame, col: str, labels: pl.DataFrame, side: str, *, raw: str | None = None) -> None:
    """Refuse a label key in ``df[col]`` that :func:`label_table`'s ``labels`` (``criterion,
    key``) does not hold for its criterion: a typo such as "MTE" is never silently excluded.
    The error quotes the label as written, from column ``raw`` when given."""
    bad = df.filter(pl.col(col).is_not_null()).join(
        labels, left_on=["criterion", col], right_on=["criterion", "key"], how="anti"
    )
    if bad.height:
        r = bad.row(0, named=True)
        why = (  # an NA token where the criterion has no NA label (a numeric criterion, options without NA)
            "; this criterion has no NA label: leave the label null and the row is left out"
            if r[col] in _NA_TOKENS
            else ""
        )
        raise ValueError(
            f"{side}: {bad.height} label(s) not allowed by the rubric; first: id={r['id']!r}, "
            f"criterion={r['criterion']!r}, label={r[raw or col]!r}{why}"
        )


def human_frame(human: Any) -> pl.DataFrame:
    h = to_polars(human, name="human")
    if "label" not in h.columns and "verdict" in h.columns:
        h = h.rename({"verdict": "label"})
    missing = [c for c in ("id", "criterion", "label") if c not in h.columns]
    if missing:
        raise ValueError(f"human labels need columns id, criterion, label (optional rater); missing {missing}")
    had_rater = "rater" in h.columns
    if not had_rater:
        h = h.with_columns(pl.lit("human").alias("rater"))
    h = h.with_columns(pl.col("rater").cast(pl.String), pl.col("criterion").cast(pl.String))
    if had_rater and 0 < (unnamed := h["rater"].null_count()) < h.height:
        warnings.warn(
            f"human labels: {unnamed} of {h.height} rows have no rater (null); they count as one more rater",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    if h.schema["label"].is_float():  # a NaN label is a missing one, as pandas writes it
        h = h.with_columns(pl.col("label").fill_nan(None))
    blank = h.filter(pl.col("label").is_null())
    if blank.height:
        r = blank.row(0, named=True)
        warnings.warn(
            f"human labels: {blank.height} row(s) have no label (null or NaN) and are left out; first: id={r['id']!r}, "
            f"criterion={r['criterion']!r}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
        h = h.filter(pl.col("label").is_not_null())
    dup = h.filter(pl.struct("id", "criterion", "rater").is_duplicated())
    if dup.height:
        r = dup.row(0, named=True)
        first = f"first: id={r['id']!r}, criterion={r['criterion']!r}"
        if had_rater:
            raise ValueError(
                f"human labels: {dup.height} rows repeat an (id, criterion, rater) ({first}, rater={r['rater']!r}); "
                "each rater labels each criterion of a submission once: drop or merge the repeats"
            )
        raise ValueError(
            f"human labels: {dup.height} rows repeat an (id, criterion) ({first}); if several people labelled, "
            "add a 'rater' column naming who gave each label"
        )
    return h


def check_ids(verdicts: pl.DataFrame, human: pl.DataFrame) -> pl.DataFrame:
    """``human`` with ids of the verdicts' dtype; a clear error when the two id columns cannot be
    compared (text against numbers) or share no id at all."""
    vt, ht = verdicts.schema["id"], human.schema["id"]
    if vt != ht:
        if vt.is_numeric() and ht.is_numeric():
            human = human.with_columns(pl.col("id").cast(vt))
        else:
            raise ValueError(
                f"ids cannot be matched: the verdict table's id column is {vt}, the human labels' is {ht}; cast "
                "one to the other's type first (e.g. human.with_columns(pl.col('id').cast(pl.String)))"
            )
    if human.height and verdicts.height and not human.join(verdicts.select("id").unique(), on="id").height:
        raise ValueError(
            f"no id of the human labels is in the verdict table (verdict ids such as "
            f"{verdicts['id'].head(3).to_list()}, label ids such as {human['id'].head(3).to_list()}): were they graded "
            "under another id_column?"
        )
    return human


def verdict_frame(verdicts: Any, by: list[str]) -> pl.DataFrame:
    v = to_polars(verdicts, name="verdicts")
    missing = [c for c in ("id", "criterion", "verdict") if c not in v.columns]
    if missing:
        raise ValueError(f"verdict table is missing column(s) {missing}")
    if "error" not in v.columns:
        v = v.with_columns(pl.lit(None, dtype=pl.String).alias("error"))
    if "judge" not in v.columns:
        v = v.with_columns(pl.lit("judge").alias("judge"))
    v = v.filter(pl.col("criterion") != HOLISTIC)
    if "judge" not in by and v.select(pl.struct("id", "criterion").is_duplicated().any()).item():
        judges = v["judge"].unique().to_list()
        if len(judges) == 1:
            raise ValueError("verdict table has several rows for one (id, criterion) from the same judge")
        if "ensemble" in judges:
            v = v.filter(pl.col("judge") == "ensemble")
        else:
            raise ValueError(
                f"verdict table has several judges {judges} per (id, criterion); pass by=['judge', 'criterion'] "
                "to measure each, or aggregate them into an ensemble first"
            )
    return v


def warn_pooled_judges(v: pl.DataFrame) -> None:
    """Several judges on one criterion, each on its own submissions, are pooled by
    :func:`rubrictools.agreement` when ``by`` leaves ``judge`` out: said, not hidden (rule rows
    beside a model's on other criteria are one judge per criterion, and say nothing)."""
    if "judge" not in v.columns or "criterion" not in v.columns:
        return
    v = v.filter(pl.col("criterion") != HOLISTIC)
    if v.select(pl.struct("id", "criterion").is_duplicated().any()).item():
        return  # several verdicts per (id, criterion): verdict_frame keeps the ensemble's or refuses
    mixed = (
        v.group_by("criterion", maintain_order=True)
        .agg(pl.col("judge").unique(maintain_order=True))
        .filter(pl.col("judge").list.len() > 1)
    )
    if mixed.height:
        where = "; ".join(f"{r['criterion']!r}: {r['judge']}" for r in mixed.head(3).iter_rows(named=True))
        warnings.warn(
            f"several judges graded one criterion on different submissions ({where}); their verdicts are "
            "pooled as one judge's. Pass by=['judge', 'criterion'] to measure each",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def mode_consensus(h: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Majority label per unit (median code for ordinal); ties are excluded and counted."""
    rated = h.filter(pl.col("h_code").is_not_null())
    counts = rated.group_by([*keys, "h_code"]).agg(pl.len().alias("c"), pl.col("h_value").first())
    best = counts.with_columns(pl.col("c").max().over(keys).alias("cmax"))
    top = best.filter(pl.col("c") == pl.col("cmax"))
    ntop = top.group_by(keys).agg(pl.len().alias("ntop"), pl.col("h_code").first(), pl.col("h_value").first())
    kinds = rated.group_by(keys).agg(
        pl.col("kind").first(), pl.col("h_code").sort().alias("codes"), pl.col("h_value").sort().alias("vals")
    )
    med = kinds.with_columns(
        pl.col("codes").list.get((pl.col("codes").list.len() - 1) // 2).alias("med_code"),
        pl.col("vals").list.get((pl.col("vals").list.len() - 1) // 2).alias("med_value"),
    )
    out = ntop.join(med.select([*keys, "kind", "med_code", "med_value"]), on=keys)
    ordinal = pl.col("kind") == "ordinal"
    out = out.with_columns(
        pl.when(ordinal).then(pl.col("med_code")).when(pl.col("ntop") == 1).then(pl.col("h_code")).alias("h_code"),
        pl.when(ordinal).then(pl.col("med_value")).when(pl.col("ntop") == 1).then(pl.col("h_value")).alias("h_value"),
    )
    units = h.select(keys).unique(maintain_order=True)  # units with only NA labels stay, uncoded
    out = units.join(out.select([*keys, "h_code", "h_value"]), on=keys, how="left", maintain_order="left")
    return out.with_columns(pl.lit("consensus").alias("rater")).select([*keys, "rater", "h_code", "h_value"])

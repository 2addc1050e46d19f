"""Exact, vectorised rubric scoring of a verdict table.

Formulas (for one submission, over the criteria *kept* after the CANNOT_ASSESS strategy):

* contribution of criterion *i*: ``c_i = v_i * w_i`` where ``v_i`` is 1 for MET, 0 for UNMET
  and the option value for a multi-choice answer;
* ``raw_score = S = sum_i c_i`` (negative weights subtract when MET);
* if any kept weight is positive: ``score = clamp(S / sum_i max(0, w_i), 0, 1)``;
* else, if any kept weight is negative (an all-penalty rubric):
  ``score = clamp(1 + S / sum_i |w_i|, 0, 1)``;
* else (only zero weights): ``score = 0``.

A ``NOT_APPLICABLE`` row (a conditional criterion, ``applies_when``, on a row that does not meet
its condition) is dropped from numerator and denominator whatever the strategy, and is not
counted as unassessed. CANNOT_ASSESS (binary) and NA options (multi-choice) follow
``cannot_assess``:

* ``"skip"`` (default): dropped from numerator and denominator;
* ``"zero"``: kept with ``c_i = 0`` (counts as unmet);
* ``"partial"``: kept with ``c_i = partial_credit * w_i`` for positive weights, 0 for penalties;
* ``"worst"``: kept at the criterion's worst realisable outcome, ``c_i = worst_i * w_i`` (UNMET
  for a reward, MET for a penalty, the score-minimising option of a multi-choice criterion):
  autorubric's ``FAIL``;
* ``"fail"``: the submission's ``score`` is 0 (``raw_score`` stays the assessed sum; null when
  every criterion is unassessable): one unassessable criterion fails the whole submission.

A failed judge call (``error`` not null) is never a CANNOT_ASSESS: by default
(``on_error="null"``) the submission's score is null and ``error`` names the criterion;
``on_error="skip"`` drops errored criteria like ``skip``; ``on_error="worst"`` scores them
at their worst realisable outcome (UNMET for rewards, MET for penalties).

Groups (``Rubric(groups=...)``): each declared group *g* gets a sub-score ``s_g`` in [0, 1]
from its kept members, reported as a ``score:<group>`` column. With member credit
``u_i = c_i / w_i`` for rewards and ``1 + c_i / |w_i|`` for penalties:

* ``weighted_mean``: the formula above restricted to the group;
* ``weighted_sum``: the same sub-score, plus a ``raw:<group>`` column with the raw weighted
  sum, ``sum_i c_i`` over the group's kept criteria (``sum_k W_k s_k`` for a group of groups):
  rubrify's unnormalised ``weighted_sum``, reported beside the 0-1 score it cannot replace;
* ``min`` / ``max``: ``min_i u_i`` / ``max_i u_i``;
* ``all``: 1 when every ``u_i = 1``, else 0; ``any``: 1 when some ``u_i = 1``, else 0.

A group whose members are groups (``Group(parent=...)``) aggregates their sub-scores instead
(see :class:`~rubrictools.rubric.Group`). The normalised score is then ``sum_g W_g s_g /
sum_g W_g`` over the top-level groups with a sub-score.

Criteria tagged ``"pattern"`` (weight 0: rubrify's pattern library, read by
:meth:`Rubric.from_rubrify <rubrictools.Rubric.from_rubrify>`) do not count; a ``pattern_hits``
column lists, per submission, those whose verdict is MET.

Disqualifiers and required criteria: when a disqualifier is MET, or a required criterion
earns its lowest outcome, the score is capped at the criterion's ``cap`` (default 0; the
lowest cap wins) and ``disqualified`` names the criteria. Decision thresholds (the rubric's
or ``thresholds=``) then label the final score in a ``decision`` column: the first cut-off
the score reaches, highest first; a score below every cut-off, or a null score, gets null. A
capped submission's decision is the rubric's ``disqualified_decision`` when it has one
(rubrify's ``"Rejected"``).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.rubric.group_scores import criterion_aggs, group_scores, normalised
from rubrictools.rubric.groups import parse_thresholds
from rubrictools.rubric.length import LengthPenalty, word_count
from rubrictools.stack import user_stacklevel
from rubrictools.verdicts import HOLISTIC, NOT_APPLICABLE, validate_verdicts

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.rubric.model import Rubric

__all__ = ["CANNOT_ASSESS_STRATEGIES", "LengthPenalty", "score", "select_judge", "word_count"]

CannotAssess = Literal["skip", "zero", "partial", "worst", "fail"]
CANNOT_ASSESS_STRATEGIES = ("skip", "zero", "partial", "worst", "fail")
OnError = Literal["null", "skip", "worst"]
ValueFrom = Literal["label", "expected"]


def select_judge(v: pl.DataFrame, judge: str | None) -> pl.DataFrame:
    """The rows of ``judge`` (and rule rows); with none named, the table itself when it has one
    row per (id, criterion), else its ``ensemble`` rows, else an error asking for ``judge=``."""
    rule = pl.col("judge") == "rule"  # rule rows are shared by every judge
    if judge is not None:
        out = v.filter((pl.col("judge") == judge) | rule)
        if out.height == 0 or (judge != "rule" and out.filter(~rule.fill_null(False)).height == 0):
            raise ValueError(f"no verdicts from judge {judge!r}; judges present: {v['judge'].unique().to_list()}")
        return out
    if v.select(pl.struct("id", "criterion").is_duplicated().any()).item():
        judges = v["judge"].unique().to_list()
        if "ensemble" in judges:
            return v.filter((pl.col("judge") == "ensemble") | rule)
        raise ValueError(
            f"verdict table has several rows per (id, criterion) (judges {judges}); pass judge=... "
            "or aggregate them first"
        )
    return v


def score(
    verdicts: Any,
    rubric: Rubric | None = None,
    *,
    cannot_assess: CannotAssess = "skip",
    partial_credit: float = 0.5,
    normalize: bool = True,
    on_error: OnError = "null",
    length_penalty: LengthPenalty | None = None,
    lengths: Any = None,
    judge: str | None = None,
    thresholds: Any = None,
    value: ValueFrom = "label",
) -> pl.DataFrame:
    """Score every submission of a verdict table.

    Parameters
    ----------
    verdicts
        A verdict table (polars or pandas; see :mod:`rubrictools.verdicts`).
    rubric
        The rubric; when omitted the table's ``weight`` column is used (per-item rubrics).
    cannot_assess, partial_credit
        CANNOT_ASSESS / NA strategy: ``"skip"``, ``"zero"``, ``"partial"``, ``"worst"`` (autorubric's
        ``FAIL``: the criterion at its worst outcome) or ``"fail"`` (the whole score 0); formulas
        in the module docstring.
    normalize
        ``True``: score in [0, 1]; ``False``: ``score`` is the raw weighted sum.
    on_error
        ``"null"`` (default), ``"skip"`` or ``"worst"`` for rows whose judge call failed.
    length_penalty, lengths
        Optional :class:`LengthPenalty`; ``lengths`` gives the counts per submission as a
        frame with ``id, length`` (see :func:`word_count`; counts of another part than the
        penalty's ``penalty_type`` are refused) or a mapping id -> count, or the submissions
        themselves (``id, submission``), counted here on ``penalty_type``.
    judge
        Which judge's rows to score when the table holds several (defaults to ``"ensemble"``
        rows when present). Rule rows (``judge="rule"``) are always included.
    thresholds
        Decision cut-offs (``{"pass": 0.8, "borderline": 0.5, "fail": 0}`` or a list of
        ``(label, min)``, highest first); defaults to the rubric's; ``False`` for none.
    value
        ``"label"`` (default): a criterion's value is its verdict's. ``"expected"``: the
        expectation over the judge's label distribution (``grade(..., distribution=True)``), as
        G-Eval scores, so scores are continuous and ties break:
        ``value = sum_l p(l) * value(l) / sum_{l not NA} p(l)`` (binary: ``p(MET)`` when no
        probability went to CANNOT_ASSESS). A row whose verdict is CANNOT_ASSESS/NA or an
        error, a row without a distribution and a numeric-range criterion keep the label's
        value. Needs the rubric. Agreement on these scores: pass the score table to
        :func:`rubrictools.agreement` (``rt.agreement(rt.score(v, rubric, value="expected"),
        human, rubric)``, score-level rows).

    Returns
    -------
    polars.DataFrame
        One row per submission, in order of first appearance:
        ``id, score, raw_score, cannot_assess_count, error_count, error``, plus
        ``score:<group>`` per declared group, ``disqualified`` when the rubric has
        disqualifiers or required criteria or the verdicts a ``disqualified_by`` column
        (a reply that broke a disqualifying output constraint: the score is capped at 0),
        ``length_penalty`` when one is applied and ``decision`` when thresholds apply.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"weight": 10, "requirement": "a"}, {"weight": 5, "requirement": "b"},
    ...                               {"weight": -15, "requirement": "c"}])
    >>> v = pl.DataFrame({"id": [1, 1, 1], "criterion": ["c1", "c2", "c3"], "verdict": ["MET", "UNMET", "UNMET"]})
    >>> rt.score(v, rubric).select("score", "raw_score").row(0)
    (0.6666666666666666, 10.0)
    """
    _check(cannot_assess=cannot_assess, on_error=on_error, partial_credit=partial_credit, value=value)
    if length_penalty is not None and lengths is None:
        raise ValueError("length_penalty needs lengths= (e.g. rt.word_count(df, column=...))")
    if value == "expected" and rubric is None:
        raise ValueError("value='expected' needs the rubric (the value of every label)")
    v = select_judge(validate_verdicts(verdicts, rubric), judge)
    if value == "expected":
        v = _expected_values(v, rubric)
    id_dtype = v.schema["id"]
    v = _contributions(v, cannot_assess, partial_credit, on_error)
    groups = rubric.groups if rubric is not None else ()
    gates = [c for c in rubric if c.disqualifier or c.required] if rubric is not None else []
    patterns = [c.name or "" for c in rubric or () if "pattern" in c.tags]
    by_reply = _reply_disqualifications(v, rubric)  # grade(output_constraints=[... enforcement="disqualify"])
    v, gate_aggs = _gates(v, gates, by_reply=by_reply)
    gates_or_reply = bool(gates) or by_reply
    if groups:
        group_of = {c.name: c.group for c in rubric or ()}
        v = v.with_columns(
            pl.col("criterion").replace_strict(group_of, default=None, return_dtype=pl.String).alias("__group")
        )
    per_id = _per_submission(v, [*_pattern_aggs(patterns), *gate_aggs, *criterion_aggs(groups)])
    per_id = per_id.with_columns(_error(rubric, on_error).alias("error"))
    if groups:
        per_id = group_scores(per_id, groups)
    out, group_cols = _scores(per_id, groups, normalize=normalize, cannot_assess=cannot_assess, gates=gates_or_reply)
    cols = ["id", "score", "raw_score", "cannot_assess_count", "error_count", "error", *group_cols]
    cols += ["pattern_hits"] if patterns else []
    if gates_or_reply:
        out = out.with_columns(_disqualified().alias("disqualified"))
        cols.append("disqualified")
    if length_penalty is not None:
        out = _penalised(out, _lengths_frame(lengths, id_dtype, length_penalty), length_penalty, normalize)
        cols.append("length_penalty")
    cuts = _resolve_thresholds(thresholds, rubric)
    if cuts:
        out = out.with_columns(_decision(cuts, rubric, gates_or_reply).alias("decision"))
        cols.append("decision")
    return out.select(cols)


def _reply_disqualifications(v: pl.DataFrame, rubric: Rubric | None) -> bool:
    """Whether the verdicts carry a ``disqualified_by`` column (text: which disqualifying output
    constraint a reply broke); a rubric with such constraints and a table without the column is
    warned about, since nothing checked them."""
    if "disqualified_by" not in v.columns:
        rules = [
            c.id for c in (rubric.output_constraints if rubric is not None else ()) if c.enforcement == "disqualify"
        ]
        if rules:
            warnings.warn(
                f"score: the rubric's disqualifying output constraints {rules} were not checked on these verdicts "
                "(no 'disqualified_by' column): grade with this rubric to check them",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        return False
    dtype = v.schema["disqualified_by"]
    if dtype not in (pl.String, pl.Null):
        raise ValueError(
            f"verdicts: column 'disqualified_by' must hold text (which constraint a reply broke), got {dtype}"
        )
    return True


def _check(*, cannot_assess: str, on_error: str, partial_credit: float, value: str) -> None:
    if cannot_assess not in CANNOT_ASSESS_STRATEGIES:
        raise ValueError(f"cannot_assess must be one of {CANNOT_ASSESS_STRATEGIES}, got {cannot_assess!r}")
    if on_error not in ("null", "skip", "worst"):
        raise ValueError(f"on_error must be 'null', 'skip' or 'worst', got {on_error!r}")
    if not 0.0 <= partial_credit <= 1.0:
        raise ValueError(f"partial_credit must be in [0, 1], got {partial_credit}")
    if value not in ("label", "expected"):
        raise ValueError(f"value must be 'label' or 'expected', got {value!r}")


def _contributions(v: pl.DataFrame, cannot_assess: str, partial_credit: float, on_error: str) -> pl.DataFrame:
    """``v`` with each row's part in the score: ``__keep`` (counts in the sums), ``__c``
    (contribution ``c_i``), ``__u`` (credit ``u_i``), ``__na`` (unassessed) and ``__err``."""
    w = pl.col("weight")
    is_err = pl.col("error").is_not_null()
    inapplicable = ~is_err & (pl.col("verdict") == NOT_APPLICABLE).fill_null(False)
    is_na = ~is_err & pl.col("value").is_null() & ~inapplicable
    is_ok = ~is_err & pl.col("value").is_not_null()
    na_keep, na_c = {
        "skip": (pl.lit(False), pl.lit(0.0)),
        "zero": (pl.lit(True), pl.lit(0.0)),
        "partial": (pl.lit(True), pl.when(w > 0).then(partial_credit * w).otherwise(0.0)),
        "worst": (pl.lit(True), pl.col("worst_value") * w),
        "fail": (pl.lit(False), pl.lit(0.0)),  # the score becomes 0; the criterion adds nothing to the sums
    }[cannot_assess]
    err_keep, err_c = (pl.lit(True), pl.col("worst_value") * w) if on_error == "worst" else (pl.lit(False), pl.lit(0.0))
    keep = pl.when(is_ok).then(True).when(is_na).then(na_keep).when(inapplicable).then(False).otherwise(err_keep)
    contrib = pl.when(is_ok).then(pl.col("value") * w).when(is_na).then(na_c).otherwise(err_c)
    v = v.with_columns(keep.alias("__keep"), contrib.alias("__c"), is_na.alias("__na"), is_err.alias("__err"))
    credit = pl.when(w > 0).then(pl.col("__c") / w).when(w < 0).then(1.0 + pl.col("__c") / w.abs())
    return v.with_columns(credit.alias("__u"))


def _pattern_aggs(patterns: list[str]) -> list[pl.Expr]:
    """Informational pattern criteria (rubrify's pattern library): which ones matched."""
    if not patterns:
        return []
    hit = pl.col("criterion").is_in(patterns) & (pl.col("verdict") == "MET")
    return [pl.col("criterion").filter(hit).alias("pattern_hits")]


def _gates(v: pl.DataFrame, gates: list[Any], *, by_reply: bool = False) -> tuple[pl.DataFrame, list[pl.Expr]]:
    """Disqualifiers, required criteria and disqualifying replies (``disqualified_by``, cap 0):
    which rows are hit (``__hit``), and the per-submission cap (``__capped``, the lowest) and
    names (``__dq``) to aggregate."""
    if not gates and not by_reply:
        return v, []
    cap = {c.name: (c.cap or 0.0) for c in gates}
    dq = [c.name for c in gates if c.disqualifier]
    floor = {c.name: c.floor_value for c in gates if c.required}
    floor_of = pl.col("criterion").replace_strict(floor, default=None, return_dtype=pl.Float64)
    met_dq = pl.col("criterion").is_in(dq) & (pl.col("value") >= 1.0 - 1e-12)
    at_floor = pl.col("criterion").is_in(list(floor)) & (pl.col("value") <= floor_of + 1e-12)
    hit = pl.col("error").is_null() & pl.col("value").is_not_null() & (met_dq | at_floor)
    cap_of = pl.col("criterion").replace_strict(cap, default=None, return_dtype=pl.Float64)
    name = pl.col("criterion")
    if by_reply:
        broke = (pl.col("disqualified_by").str.strip_chars() != "").fill_null(False)  # also on an error row
        cap_of = pl.when(broke).then(pl.lit(0.0)).otherwise(cap_of)
        name = pl.when(broke).then(pl.col("disqualified_by")).otherwise(name)
        hit = hit.fill_null(False) | broke
    v = v.with_columns(hit.fill_null(False).alias("__hit"), cap_of.alias("__cap"), name.alias("__dq_name"))
    aggs = [
        pl.col("__cap").filter("__hit").min().alias("__capped"),
        pl.col("__dq_name").filter("__hit").unique(maintain_order=True).str.join(", ").alias("__dq"),
    ]
    if by_reply:  # a broken disqualifying rule decides the score (0) even when its rows failed otherwise
        aggs.append(broke.any().alias("__reply_dq"))
    return v, aggs


def _per_submission(v: pl.DataFrame, extra: list[pl.Expr]) -> pl.DataFrame:
    """One row per submission, in order of first appearance, with the sums of the formulas."""
    w = pl.col("weight")
    return v.group_by("id", maintain_order=True).agg(
        *extra,
        pl.col("__c").filter("__keep").sum().alias("S"),
        w.filter(pl.col("__keep") & (w > 0)).sum().alias("P"),
        (-w).filter(pl.col("__keep") & (w <= 0)).sum().alias("N"),
        pl.col("__keep").sum().alias("n_kept"),
        pl.col("__na").sum().cast(pl.Int64).alias("cannot_assess_count"),
        pl.col("__err").sum().cast(pl.Int64).alias("error_count"),
        pl.format("{}: {}", pl.col("criterion"), pl.col("error")).filter("__err").str.join("; ").alias("__errmsg"),
        pl.col("criterion").alias("__crits"),
        pl.col("criterion").is_in([HOLISTIC]).any().alias("__holistic"),
    )


def _error(rubric: Rubric | None, on_error: str) -> pl.Expr:
    """Why a submission has no score: a rubric criterion without a verdict (holistic rows stand
    for the whole rubric), or, with ``on_error="null"``, a failed judge call."""
    missing_msg = pl.lit(None, dtype=pl.String)
    if rubric is not None:
        missing = pl.lit(list(rubric.names), dtype=pl.List(pl.String)).list.set_difference(pl.col("__crits"))
        missing_msg = (
            pl.when(~pl.col("__holistic") & (missing.list.len() > 0))
            .then(pl.format("missing verdict(s) for criteria: {}", missing.list.join(", ")))
            .otherwise(None)
        )
    errored = pl.col("error_count") > 0 if on_error == "null" else pl.lit(False)
    return (
        pl.when(missing_msg.is_not_null())
        .then(missing_msg)
        .when(errored)
        .then(pl.format("judge error on {}", pl.col("__errmsg")))
        .otherwise(None)
    )


def _scores(
    per_id: pl.DataFrame, groups: tuple[Any, ...], *, normalize: bool, cannot_assess: str, gates: bool
) -> tuple[pl.DataFrame, list[str]]:
    """``score`` and ``raw_score`` (null when undefined), and the groups' sub-score columns."""
    S = pl.col("S")
    undefined = pl.col("error").is_not_null() | (pl.col("n_kept") == 0)
    normalised_score = normalised(S, pl.col("P"), pl.col("N"))
    group_cols: list[str] = []
    if groups:  # holistic rows stand for the whole rubric: their score is the plain formula's
        normalised_score = pl.when(pl.col("__holistic")).then(normalised_score).otherwise(pl.col("__g:__grouped"))
        raws = [g.name for g in groups if g.aggregation == "weighted_sum"]
        per_id = per_id.with_columns(
            *(
                pl.when(undefined).then(None).otherwise(pl.col(f"__g:{g.name}")).alias(f"score:{g.name}")
                for g in groups
            ),
            *(pl.when(undefined).then(None).otherwise(pl.col(f"__raw:{n}")).alias(f"raw:{n}") for n in raws),
        )
        group_cols = [f"score:{g.name}" for g in groups] + [f"raw:{n}" for n in raws]
    base = normalised_score if normalize else S
    if cannot_assess == "fail":
        base = pl.when(pl.col("cannot_assess_count") > 0).then(0.0).otherwise(base)
    if gates:
        ceiling = pl.col("__capped") if normalize else pl.col("__capped") * pl.col("P")
        base = pl.when(pl.col("__capped").is_not_null()).then(pl.min_horizontal(base, ceiling)).otherwise(base)
    out = per_id.with_columns(
        pl.when(pl.col("__reply_dq") if "__reply_dq" in per_id.columns else pl.lit(False))
        .then(0.0)
        .when(undefined)
        .then(None)
        .otherwise(base)
        .cast(pl.Float64)
        .alias("score"),
        pl.when(undefined).then(None).otherwise(S).cast(pl.Float64).alias("raw_score"),
    )
    return out, group_cols


def _disqualified() -> pl.Expr:
    return (
        pl.when(pl.col("__dq").str.len_chars() > 0)
        .then(pl.format("capped at {} by {}", pl.col("__capped").round(3).cast(pl.String), pl.col("__dq")))
        .otherwise(None)
    )


def _penalised(out: pl.DataFrame, lens: pl.DataFrame, penalty: LengthPenalty, normalize: bool) -> pl.DataFrame:
    out = out.join(lens, on="id", how="left", maintain_order="left")
    if out["length"].null_count():
        bad = out.filter(pl.col("length").is_null())["id"].head(3).to_list()
        raise ValueError(f"lengths: no length for submission id(s) {bad} (missing, or a null submission)")
    pen = penalty.expr(pl.col("length"))
    adjusted = pl.col("score") - pen
    return out.with_columns(
        pen.alias("length_penalty"), (adjusted.clip(lower_bound=0.0) if normalize else adjusted).alias("score")
    )


def _decision(cuts: tuple[Any, ...], rubric: Rubric | None, gates: bool) -> pl.Expr:
    """The first cut-off the score reaches, highest first; a capped submission's is the
    rubric's ``disqualified_decision`` when it has one."""
    decision = pl.lit(None, dtype=pl.String)
    for t in reversed(cuts):
        decision = pl.when(pl.col("score") >= t.min).then(pl.lit(t.label)).otherwise(decision)
    rejected = rubric.disqualified_decision if rubric is not None else None
    if gates and rejected is not None:
        decision = pl.when(pl.col("__capped").is_not_null()).then(pl.lit(rejected)).otherwise(decision)
    return decision


def _expected_values(v: pl.DataFrame, rubric: Rubric | None) -> pl.DataFrame:
    """``value`` replaced by its expectation over the row's ``distribution`` (see :func:`score`)."""
    if rubric is None:
        raise ValueError("value='expected' needs the rubric (the value of every label)")
    if "distribution" not in v.columns:
        raise ValueError("value='expected' needs a 'distribution' column: grade with distribution=True")
    labels = rubric.label_frame().select("criterion", "label", pl.col("value").alias("__lv"))
    expected = (pl.col("prob") * pl.col("__lv")).sum()  # NA labels have no value: they add nothing
    real_mass = pl.col("prob").filter(pl.col("__lv").is_not_null()).sum()
    dist = (
        v.with_row_index("__i")
        .filter(pl.col("value").is_not_null() & pl.col("distribution").list.len().gt(0))
        .select("__i", "criterion", "distribution")
        .explode("distribution")
        .unnest("distribution")
        .join(labels, on=["criterion", "label"], how="inner")
        .group_by("__i")
        .agg((expected / real_mass).alias("__ev"))
    )
    out = v.with_row_index("__i").join(dist, on="__i", how="left", maintain_order="left")
    ev = pl.col("__ev")
    return out.with_columns(
        pl.when(ev.is_not_null() & ev.is_finite()).then(ev).otherwise(pl.col("value")).alias("value")
    ).drop("__i", "__ev")


def _resolve_thresholds(thresholds: Any, rubric: Rubric | None) -> tuple[Any, ...]:
    if thresholds is False:
        return ()
    if thresholds is None:
        return rubric.thresholds if rubric is not None else ()

    return parse_thresholds(thresholds)


def _lengths_frame(lengths: Any, id_dtype: pl.DataType, penalty: LengthPenalty) -> pl.DataFrame:
    """Counts per id: given (``id, length``; :func:`word_count` also records the ``part`` it
    counted, which must be the penalty's ``penalty_type``), or counted here from the
    submissions (``id, submission``) on the penalty's part."""
    if isinstance(lengths, dict):
        frame = pl.DataFrame({"id": list(lengths), "length": list(lengths.values())})
    else:
        frame = to_polars(lengths, name="lengths")
    if "length" not in frame.columns and {"id", "submission"} <= set(frame.columns):
        frame = word_count(frame, id_column="id", part=penalty.penalty_type)
    if not {"id", "length"} <= set(frame.columns):
        raise ValueError("lengths: expected columns 'id' and 'length' (see rt.word_count), or 'id' and 'submission'")
    if "part" in frame.columns:
        parts = set(frame["part"].unique().to_list())
        if parts != {penalty.penalty_type}:
            raise ValueError(
                f"lengths count part(s) {sorted(parts)} but the length penalty's penalty_type is "
                f"{penalty.penalty_type!r}: count with rt.word_count(..., part={penalty.penalty_type!r}) or pass the "
                "submissions as lengths="
            )
    return frame.select(pl.col("id").cast(id_dtype), pl.col("length").cast(pl.Float64))

"""Deterministic criteria that need no LLM: regex, substring, length and JSON-schema checks.

A :class:`Rule` is attached to a criterion (``Criterion(rule=...)``); the criterion is then
decided by the rule, never by a judge, and its verdict rows carry ``judge="rule"``. A rule
holds one or more checks and is MET when **all** of them hold:

* ``regex`` (with ``flags`` among ``i``, ``m``, ``s``, ``x``): the pattern is found;
* ``contains``: one of the strings occurs (``case_sensitive=False`` by default);
* ``min_words`` / ``max_words`` / ``min_chars`` / ``max_chars``: length bounds, inclusive
  (words are runs of non-space characters);
* ``json_schema``: the text parses as JSON and validates against the schema (``{}`` accepts
  any JSON value). This check alone runs per distinct text in Python (jsonschema); all the
  others are single polars expressions over the whole column.

A penalty is a rule with a negative weight (MET subtracts), and a rule criterion can be a
disqualifier (``disqualifier=True``) like any binary criterion.

Example
-------
>>> import polars as pl, rubrictools as rt
>>> rubric = rt.Rubric.from_dict([
...     {"name": "short", "rule": {"max_words": 5}},
...     {"name": "no_ai_talk", "weight": -5, "rule": {"regex": "as an ai", "flags": "i"}},
... ])
>>> v = rt.apply_rules(pl.DataFrame({"submission": ["Paris.", "As an AI, I think it is Paris."]}), rubric)
>>> v.select("id", "criterion", "verdict").rows()
[(0, 'short', 'MET'), (0, 'no_ai_talk', 'UNMET'), (1, 'short', 'UNMET'), (1, 'no_ai_talk', 'MET')]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.grading.trajectory_rules import trajectory_verdicts
from rubrictools.rubric import Rubric, Rule
from rubrictools.rubric import Rubric as _Rubric
from rubrictools.submissions import Submission, graded_text, split_submission
from rubrictools.verdicts import VERDICT_SCHEMA

__all__ = ["Rule", "apply_rules", "no_judge_rows", "no_judge_schema", "rule_table", "rule_verdicts"]


def _json_check(texts: pl.Series, schema: dict[str, Any]) -> tuple[pl.Series, pl.Series]:
    """(ok, reason) per text; runs once per distinct text."""
    import jsonschema
    import polars as pl

    validator = jsonschema.validators.validator_for(schema)(schema)
    uniq = texts.unique()
    oks, reasons = [], []
    for t in uniq.to_list():
        try:
            doc = json.loads(t)
        except (TypeError, ValueError) as e:
            oks.append(False)
            reasons.append(f"not valid JSON ({e})")
            continue
        err = jsonschema.exceptions.best_match(validator.iter_errors(doc))
        oks.append(err is None)
        reasons.append(
            "valid JSON matching the schema" if err is None else f"JSON does not match the schema: {err.message}"
        )
    table = pl.DataFrame(
        {"t": uniq, "ok": oks, "why": reasons}, schema={"t": pl.String, "ok": pl.Boolean, "why": pl.String}
    )
    joined = pl.DataFrame({"t": texts}).join(table, on="t", how="left", maintain_order="left", nulls_equal=True)
    return joined["ok"], joined["why"]


def rule_verdicts(texts: pl.Series, rule: Rule) -> tuple[pl.Series, pl.Series]:
    """Vectorised verdicts (``MET``/``UNMET``) and explanations of ``rule`` over ``texts``."""
    import polars as pl

    frame = pl.DataFrame({"t": texts.cast(pl.String).fill_null("")})
    t = pl.col("t")
    conds: list[pl.Expr] = []
    whys: list[pl.Expr] = []
    if rule.regex is not None:
        hit = t.str.contains(rule.pattern or "")
        found = t.str.extract(f"({rule.pattern})", 1).str.slice(0, 60)
        conds.append(hit)
        whys.append(
            pl.when(hit)
            .then(pl.format('regex matched "{}"', found))
            .otherwise(pl.lit(f"regex /{rule.regex}/ not found"))
        )
    if rule.contains is not None:
        hay = t if rule.case_sensitive else t.str.to_lowercase()
        needles = list(rule.contains) if rule.case_sensitive else [s.lower() for s in rule.contains]
        hit = pl.any_horizontal([hay.str.contains(n, literal=True) for n in needles])
        conds.append(hit)
        shown = " or ".join(json.dumps(s, ensure_ascii=False) for s in rule.contains)
        whys.append(pl.when(hit).then(pl.lit(f"contains {shown}")).otherwise(pl.lit(f"does not contain {shown}")))
    for lo, hi, unit, n in [
        (rule.min_words, rule.max_words, "words", t.str.count_matches(r"\S+")),
        (rule.min_chars, rule.max_chars, "characters", t.str.len_chars()),
    ]:
        if lo is None and hi is None:
            continue
        cond = pl.lit(True)
        if lo is not None:
            cond = cond & (n >= lo)
        if hi is not None:
            cond = cond & (n <= hi)
        bounds = f"{lo if lo is not None else 0}..{hi if hi is not None else 'inf'}"
        conds.append(cond)
        whys.append(pl.format(f"{{}} {unit} (allowed {bounds})", n))
    frame = frame.with_columns(
        pl.all_horizontal(conds).alias("ok") if conds else pl.lit(True).alias("ok"),
        pl.concat_str(whys, separator="; ").alias("why") if whys else pl.lit(None, dtype=pl.String).alias("why"),
    )
    ok: pl.Series = frame["ok"]
    why: pl.Series = frame["why"]
    if rule.json_schema is not None:
        jok, jwhy = _json_check(frame["t"], rule.json_schema)
        ok = ok & jok
        why = (
            jwhy
            if not whys
            else pl.DataFrame({"a": why, "b": jwhy}).select(pl.concat_str(["a", "b"], separator="; "))["a"]
        )
    verdict = ok.replace_strict({True: "MET", False: "UNMET"}, return_dtype=pl.String)
    return verdict.alias("verdict"), why.alias("explanation")


def apply_rules(
    df: Any,
    rubric: Rubric,
    *,
    column: str = "submission",
    id_column: str | None = None,
    grade_part: str = "output",
    thinking_markers: bool = False,
    conversation_part: str = "last_assistant",
    on_null: Literal["raise", "error_row"] = "raise",
) -> pl.DataFrame:
    """Evaluate the rubric's rule criteria over a whole column, with no LLM.

    Parameters
    ----------
    df
        polars or pandas DataFrame, one submission per row.
    rubric
        The :class:`~rubrictools.Rubric` (or rubric dict); criteria without a rule are ignored.
    column, id_column
        The submission column (strings, ``{"thinking", "output"}`` structs or conversations)
        and the id column (row index when None).
    grade_part
        Submissions with ``<thinking>/<output>`` parts are checked on ``grade_part``
        (``"output"``, default, ``"thinking"`` or ``"all"``), as :func:`rubrictools.grade` does.
    thinking_markers
        Read string submissions marked ``<thinking>...</thinking><output>...</output>`` as
        thinking/output pairs (off by default: a string is checked whole).
    conversation_part
        Conversations are checked on ``conversation_part`` (``"last_assistant"``, default,
        ``"all_assistant"`` or ``"whole"``), as :func:`rubrictools.grade` does.
    on_null
        A null submission is refused (``"raise"``, default, as :func:`rubrictools.grade`
        does), or becomes an error row per rule criterion (``"error_row"``). It is never
        checked as empty text, which would pass a length or "must not contain" rule.

    Returns
    -------
    polars.DataFrame
        A verdict table (``judge="rule"``, zero tokens and cost) with one row per
        (submission, rule criterion) in input order.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> r = rt.Rubric.from_dict([{"name": "json", "rule": {"json_schema": {"required": ["a"]}}}])
    >>> rt.apply_rules(pl.DataFrame({"submission": ['{"a": 1}', '{"b": 2}']}), r)["verdict"].to_list()
    ['MET', 'UNMET']
    """
    import polars as pl

    rubric = rubric if isinstance(rubric, _Rubric) else _Rubric.from_dict(rubric)
    frame = to_polars(df)
    if column not in frame.columns:
        raise ValueError(f"column={column!r} is not a column of the DataFrame (columns: {frame.columns})")
    if id_column is not None and id_column not in frame.columns:
        raise ValueError(f"id_column={id_column!r} is not a column of the DataFrame (columns: {frame.columns})")
    if on_null not in ("raise", "error_row"):
        raise ValueError(f"on_null must be 'raise' or 'error_row', got {on_null!r}")
    ids = frame[id_column] if id_column is not None else pl.Series("id", range(frame.height), dtype=pl.Int64)
    col = frame[column]
    missing = col.is_null()
    if on_null == "raise" and missing.any():
        where = ids.filter(missing).head(3).to_list()
        raise ValueError(
            f"column {column!r} has {int(missing.sum())} null submission(s) (ids {where}...): drop or fill them, or "
            "pass on_null='error_row'"
        )
    subs = None
    if col.dtype == pl.String and not thinking_markers:
        texts = col  # plain strings are graded verbatim
    else:  # structured or marked submissions: split per row
        subs = [
            split_submission(x, markers=thinking_markers, conversation_part=conversation_part) for x in col.to_list()
        ]
        texts = pl.Series([graded_text(s, grade_part) for s in subs], dtype=pl.String)
    if subs is None and any(c.rule is not None and c.rule.on_trajectory for c in rubric):
        subs = [split_submission(x) for x in col.to_list()]
    table = rule_table(ids, texts, rubric, subs=subs)
    if missing.any():  # on_null="error_row": each rule criterion of a null submission is an error row
        null = pl.col("__row").is_in(pl.Series(missing.arg_true()).implode())
        table = table.with_columns(
            pl.when(null).then(None).otherwise(pl.col(c)).alias(c) for c in ("verdict", "value", "explanation")
        ).with_columns(pl.when(null).then(pl.lit("the submission is null")).otherwise(pl.col("error")).alias("error"))
    return table.drop("__row", "__pos")


def _both(texts: pl.Series, subs: Sequence[Submission] | None, rule: Rule, name: str) -> tuple[pl.Series, pl.Series]:
    """The rule's text checks and (for a rule on the trajectory) its tool checks, all holding for MET."""
    if not rule.on_trajectory:
        return rule_verdicts(texts, rule)
    if subs is None:
        raise ValueError("a rule on tool calls needs the submissions themselves (conversations), not only their text")
    tv, twhy = trajectory_verdicts(subs, rule, name)
    if not rule.on_text:
        return tv, twhy
    verdict, why = rule_verdicts(texts, rule)
    met = (pl.col("a") == "MET") & (pl.col("b") == "MET")
    both = pl.DataFrame({"a": verdict, "b": tv, "x": why, "y": twhy}).select(
        pl.when(met).then(pl.lit("MET")).otherwise(pl.lit("UNMET")).alias("v"),
        pl.concat_str(["x", "y"], separator="; ").alias("w"),
    )
    return both["v"].alias("verdict"), both["w"].alias("explanation")


def rule_table(
    ids: pl.Series,
    texts: pl.Series,
    rubric: Rubric,
    rows: pl.Series | None = None,
    subs: Sequence[Submission] | None = None,
) -> pl.DataFrame:
    """Rule verdict rows for ``ids``/``texts`` (all sharing ``rubric``; ``subs``: the same rows'
    submissions, for rules on tool calls) in row-major order, with ``__row`` (``rows``, default
    ``0..n-1``) and ``__pos`` (criterion position) columns."""
    import polars as pl

    parts = []
    row_index = rows.cast(pl.Int64) if rows is not None else pl.Series(range(len(ids)), dtype=pl.Int64)
    for pos, c in enumerate(rubric):
        if c.rule is None:
            continue
        verdict, why = _both(texts, subs, c.rule, c.name or "")
        parts.append(
            pl.DataFrame({"__row": row_index, "id": ids, "verdict": verdict, "explanation": why}).with_columns(
                pl.lit(c.name).alias("criterion"),
                pl.lit(pos).cast(pl.Int64).alias("__pos"),
                pl.col("verdict").replace_strict({"MET": 1.0, "UNMET": 0.0}, return_dtype=pl.Float64).alias("value"),
                pl.lit(c.weight).alias("weight"),
            )
        )
    if not parts:
        return pl.DataFrame(schema=no_judge_schema(ids.dtype))
    return no_judge_rows(pl.concat(parts).sort("__row", "__pos", maintain_order=True), ids.dtype)


def no_judge_schema(id_dtype: pl.DataType) -> dict[str, pl.DataType]:
    """Columns of verdict rows decided without a judge: ``__row, __pos`` and the verdict table's."""
    return {
        "__row": pl.Int64(),
        "__pos": pl.Int64(),
        **{k: (v if v is not None else id_dtype) for k, v in VERDICT_SCHEMA.items()},
    }


def no_judge_rows(frame: pl.DataFrame, id_dtype: pl.DataType) -> pl.DataFrame:
    """``frame`` (``__row, __pos, id, criterion, verdict, value, explanation, weight``) as verdict
    rows decided without a judge: ``judge="rule"``, no error, no call (0 tokens, cost, attempts)."""
    schema = no_judge_schema(id_dtype)
    fill = {
        "error": None,
        "judge": "rule",
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "cached": False,
        "attempts": 0,
        "latency_s": 0.0,
    }
    out = frame.with_columns([pl.lit(v, dtype=schema[k]).alias(k) for k, v in fill.items()])
    return out.select(list(schema)).cast(schema)  # type: ignore[arg-type]  # polars accepts the schema dict of DataType instances

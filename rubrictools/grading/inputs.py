"""Grading inputs, checked before any call: the submissions, ids, rubrics and judges of a run.

Every problem is a ValueError naming the parameter (and the row) at fault.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.conversations import NoGradedTurn
from rubrictools.frames import to_polars
from rubrictools.grading.conditions import applicable_rubrics, check_conditions
from rubrictools.grading.options import GradeOptions
from rubrictools.images import as_images
from rubrictools.judge import Grader, Judge, ResponseCache, ScriptedJudge, default_cache_path
from rubrictools.rubric import Rubric
from rubrictools.rubric.cells import rubric_cells
from rubrictools.stack import user_stacklevel
from rubrictools.submissions import Submission, split_submission

__all__ = [
    "NULL_ERROR",
    "AnyJudge",
    "Inputs",
    "cache_path",
    "open_cache",
    "prepare",
    "resolve_judges",
    "rubric_argument",
    "warn_blank",
]

AnyJudge = Judge | ScriptedJudge | Grader


@dataclass
class Inputs:
    """The rows of a run: ids (and their dtype), each row's rubric, submission and context."""

    frame: pl.DataFrame
    ids: list[Any]
    id_dtype: pl.DataType
    rubrics: list[Rubric]
    subs: list[Submission]
    queries: list[str | None]
    references: list[str | None]
    others: list[Submission] | None = None  # pairwise: the B answers (``subs`` holds A)
    systems: tuple[list[str], list[str]] | None = None  # pairwise: each row's systems of A and B
    # rows no call is made for (null submissions with on_null="error_row", conversations
    # without a turn to grade), each with the error its rows carry
    row_errors: dict[int, str] = field(default_factory=dict)
    # conditional criteria a row does not meet (``__row, criterion, __pos, why, weight``); None: none
    not_applicable: pl.DataFrame | None = None


_ROLES = {"column": "a", "pair_column": "b"}  # their names in grade_pairs


def _check_columns(frame: pl.DataFrame, opts: GradeOptions) -> None:
    named = [("column", opts.column), ("pair_column", opts.pair_column)]
    named += [(f"systems[{i}]", c) for i, c in enumerate(opts.systems or ())]
    named += [(k, getattr(opts, k)) for k in ("id_column", "query_column", "reference_column", "rubric_column")]
    for name, col in named:
        name = _ROLES.get(name, name) if opts.pairwise else name
        if col is not None and col not in frame.columns:
            raise ValueError(f"{name}={col!r} is not a column of the DataFrame (columns: {frame.columns})")
        if col is not None and name != "rubric_column" and frame.schema[col] == pl.Object:
            raise ValueError(
                f"{name}={col!r} holds Python objects (polars Object dtype); convert it to strings "
                "(or, for the submission column, a struct of thinking/output) first"
            )  # a rubric column may hold Rubric objects
        if col is not None and name in ("column", "pair_column", "a", "b"):
            _check_text_dtype(frame, col, name)


def _check_text_dtype(frame: pl.DataFrame, column: str, role: str) -> None:
    """A submission column holds text (or thinking/output structs, or conversations): numbers,
    booleans and dates are refused rather than cast, since a float column would send "nan"."""
    dtype = frame.schema[column]
    if dtype.is_numeric() or dtype.is_temporal() or dtype == pl.Boolean:
        raise ValueError(
            f"{role}={column!r} holds {dtype} values, not text; if they are the answers to grade, cast them "
            f"first: df.with_columns(pl.col({column!r}).cast(pl.String)) (a NaN would then be sent as 'NaN')"
        )


def warn_blank(frame: pl.DataFrame, column: str, ids: list[Any]) -> None:
    """Warn, naming the rows, when string submissions are empty or only whitespace: they are
    graded (an empty answer is an answer) but each costs a paid call."""
    if frame.schema[column] != pl.String:
        return
    blank = frame[column].str.strip_chars().str.len_chars().eq(0).fill_null(False).arg_true().to_list()
    if blank:
        shown = ", ".join(f"row {i} (id {ids[i]!r})" for i in blank[:5])
        more = f" and {len(blank) - 5} more" if len(blank) > 5 else ""
        warnings.warn(
            f"column={column!r}: {len(blank)} empty or whitespace-only submission(s), graded as they are: "
            f"{shown}{more}; filter them out first to save the calls",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _ids(frame: pl.DataFrame, id_column: str | None) -> tuple[list[Any], pl.DataType]:
    if id_column is None:
        return list(range(frame.height)), pl.Int64()
    idcol = frame[id_column]
    if idcol.null_count():
        raise ValueError(f"id_column {id_column!r} has null ids")
    dup = idcol.filter(idcol.is_duplicated())
    if dup.len():
        raise ValueError(f"id_column {id_column!r} has duplicate ids, e.g. {dup.unique().head(3).to_list()}")
    return idcol.to_list(), idcol.dtype


def rubric_argument(rubric: Any) -> Rubric | None:
    """The ``rubric`` argument as a Rubric: a Rubric, a dict/list, or the path of a ``.yaml``,
    ``.yml`` or ``.json`` file (:meth:`Rubric.from_file`); other text is refused, saying how to load it."""
    if rubric is None or isinstance(rubric, Rubric):
        return rubric
    if isinstance(rubric, (str, Path)):
        p = Path(rubric)
        if p.suffix.lower() in {".yaml", ".yml", ".json"}:
            return Rubric.from_file(p)
        raise ValueError(
            f"rubric: got the string {str(rubric)[:60]!r}, which is not a .yaml/.yml/.json file path; "
            "load rubric text with rt.Rubric.from_yaml(...) or rt.Rubric.from_json(...)"
        )
    return Rubric.from_dict(rubric)


def _rubrics(frame: pl.DataFrame, rubric: Rubric | None, rubric_column: str | None) -> list[Rubric]:
    rubric = rubric_argument(rubric)
    if rubric_column is None:
        if rubric is None:
            raise ValueError("grade needs a rubric (or rubric_column=)")
        return [rubric] * frame.height
    return rubric_cells(frame[rubric_column].to_list(), column="rubric_column", default=rubric)


def prepare(df: Any, rubric: Rubric | None, opts: GradeOptions) -> Inputs:
    """Check and unpack the input frame (polars, lazy or pandas) for a run with ``opts``."""
    frame = to_polars(df)
    _check_columns(frame, opts)
    ids, id_dtype = _ids(frame, opts.id_column)
    rubrics = _rubrics(frame, rubric, opts.rubric_column)
    check_conditions(frame, rubrics)
    rubrics, not_applicable = applicable_rubrics(frame, rubrics)
    nulls: dict[int, str] = {}
    subs = _submissions(frame, opts.column, _ROLES["column"] if opts.pairwise else "column", ids, opts, nulls)
    warn_blank(frame, opts.column, ids)
    if opts.image_column is not None:
        subs = _with_images(frame, opts.image_column, subs, ids)
    n = frame.height
    queries = frame[opts.query_column].cast(pl.String).to_list() if opts.query_column else [None] * n
    refs = frame[opts.reference_column].cast(pl.String).to_list() if opts.reference_column else [None] * n
    inp = Inputs(frame, ids, id_dtype, rubrics, subs, queries, refs, row_errors=nulls, not_applicable=not_applicable)
    if opts.pair_column is not None:
        inp.others = _submissions(frame, opts.pair_column, _ROLES["pair_column"], ids, opts, nulls)
        inp.systems = _systems(frame, opts, ids)
    return inp


def _with_images(frame: pl.DataFrame, column: str, subs: list[Submission], ids: list[Any]) -> list[Submission]:
    """Each submission with the images of its ``image_column`` cell (bytes, a path, a URL, a
    data URI, or a list of them; null: none) after its own; errors name the row and id."""
    out = []
    for i, (sub, value) in enumerate(zip(subs, frame[column].to_list(), strict=True)):
        try:
            extra = as_images(value, source=f"column {column!r}")
        except ValueError as e:
            raise ValueError(f"image_column {column!r}: row {i} (id {ids[i]!r}): {e}") from None
        out.append(dataclasses.replace(sub, images=sub.images + extra) if extra else sub)
    return out


NULL_ERROR = "submission is null: no call made (on_null='error_row')"


def _submissions(
    frame: pl.DataFrame, column: str, role: str, ids: list[Any], opts: GradeOptions, errors: dict[int, str]
) -> list[Submission]:
    """The column's values as submissions; errors name the parameter (``role``), row and id.
    With ``on_null="error_row"`` a null becomes an empty placeholder and its row joins
    ``errors``, as does a conversation with no turn to grade (always: it is the data's state,
    not a mistake in the call)."""
    subs = []
    for i, value in enumerate(frame[column].to_list()):
        if value is None and opts.on_null == "error_row":
            errors.setdefault(i, NULL_ERROR)
            subs.append(Submission(output=""))
            continue
        try:
            subs.append(
                split_submission(value, markers=opts.thinking_markers, conversation_part=opts.conversation_part)
            )
        except NoGradedTurn as e:
            errors.setdefault(i, f"{role} {column!r}: {e}: no call made (conversation_part={opts.conversation_part!r})")
            subs.append(Submission(output=""))
        except ValueError as e:
            hint = " (or pass on_null='error_row' to grade the other rows)" if value is None else ""
            raise ValueError(f"{role} {column!r}: row {i} (id {ids[i]!r}): {e}{hint}") from None
    return subs


def _systems(frame: pl.DataFrame, opts: GradeOptions, ids: list[Any]) -> tuple[list[str], list[str]]:
    """Each row's (system of A, system of B): from ``systems=`` columns, else the column names."""
    if opts.systems is None:
        a, b = opts.column, opts.pair_column or ""
        return [a] * frame.height, [b] * frame.height
    sa, sb = (frame[c].cast(pl.String) for c in opts.systems)
    for name, s in zip(opts.systems, (sa, sb), strict=True):
        if s.null_count():
            i = s.is_null().arg_true()[0]
            raise ValueError(f"systems column {name!r}: row {i} (id {ids[i]!r}) has no system name")
    same = (sa == sb).arg_true()
    if same.len():
        i = same[0]
        raise ValueError(
            f"systems: row {i} (id {ids[i]!r}) pairs system {sa[i]!r} with itself ({same.len()} such rows); "
            "a comparison needs two different systems"
        )
    return sa.to_list(), sb.to_list()


def resolve_judges(model: Any) -> list[AnyJudge]:
    """The judges ``model`` names: a string becomes a :class:`Judge` with the default settings."""
    if model is None:
        raise ValueError(
            "grade needs model= (a litellm model string, a Judge, a ScriptedJudge, an rt.Grader or a list of them)"
        )
    items = list(model) if isinstance(model, (list, tuple)) else [model]
    judges: list[AnyJudge] = []
    for m in items:
        if isinstance(m, (Judge, ScriptedJudge, Grader)):
            judges.append(m)
        elif isinstance(m, str) and not m.strip():
            raise ValueError("model= is an empty string: name a model, e.g. 'openai/gpt-4.1-mini'")
        elif isinstance(m, str):
            judges.append(ScriptedJudge() if m == "rubrictools/scripted" else Judge(model=m))
        else:
            raise TypeError(f"model: expected str, Judge, ScriptedJudge or rt.Grader, got {type(m).__name__}")
    labels = [j.label for j in judges]
    if len(set(labels)) != len(labels):
        raise ValueError(f"judges need distinct names (Judge(name=...)); got {labels}")
    if "ensemble" in labels:
        raise ValueError("'ensemble' is reserved for aggregated rows; rename the judge")
    return judges


def cache_path(cache: bool | str | Path | ResponseCache | None, judges: Sequence[AnyJudge] = ()) -> Path | None:
    """Where ``cache=`` says answers go: ``True`` is the judges' own cache file (they must
    agree) or the user cache dir; a path is itself; ``False``/``None`` is no cache."""
    if isinstance(cache, ResponseCache):
        return cache.path
    if cache is False or cache is None:
        return None
    if cache is True:
        paths = {str(j.cache) for j in judges if isinstance(j, Judge) and j.cache is not None}
        if len(paths) > 1:
            raise ValueError(f"judges name different cache files {sorted(paths)}; pass cache=... to choose one")
        return Path(paths.pop()) if paths else default_cache_path()
    return Path(cache)


def open_cache(
    cache: bool | str | Path | ResponseCache | None, judges: Sequence[AnyJudge] = ()
) -> ResponseCache | None:
    """The response cache ``cache=`` names, opened (the caller closes what it opened)."""
    if isinstance(cache, ResponseCache):
        return cache
    path = cache_path(cache, judges)
    return None if path is None else ResponseCache(path)

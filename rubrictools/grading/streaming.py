"""Grade more submissions than fit in memory: chunked, written as parquet parts, resumable.

``rt.grade_to_parquet(source, rubric, output="verdicts/", batch_size=10_000, ...)`` reads ``source`` (a
polars LazyFrame, a parquet file, directory or glob, or a DataFrame) one slice of
``batch_size`` rows at a time, grades the slice with the usual engine, and writes its verdict
table atomically as ``verdicts/part-00000.parquet``, ``part-00001.parquet``... Peak memory
depends on ``batch_size``, not on the size of the input.

Resuming: a part on disk is never graded again, and inside an unfinished part the response
cache answers every call that had already come back, so an interrupted run continues where
it stopped without repeating a paid call. ``_manifest.json`` records what the parts were
made from (rubric, batch size, columns); resuming into a directory made with different
settings is an error instead of a silently mixed table.

The result is a lazy scan of the parts (``pl.scan_parquet``): ``rt.score`` and
``rt.agreement`` accept it, and polars only reads the columns they need.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel

from rubrictools.disk import describe_disk, is_disk_full
from rubrictools.frames import to_polars
from rubrictools.grading.executor import Hooks
from rubrictools.grading.live import grade_frame
from rubrictools.grading.options import PAIR_OPTIONS, GradeOptions
from rubrictools.grading.plan import build_plan
from rubrictools.progress import progress_bar
from rubrictools.rubric import Rubric

__all__ = ["MANIFEST", "ROW_ID", "PartWriteError", "scan_source", "slice_of", "stream_parts"]


class PartWriteError(OSError):
    """A verdict part could not be written (a full disk). Nothing the judges answered is lost:
    ``verdicts`` holds the part's table, and the response cache keeps every answer (in its
    reserve file when the disk refuses the database too), so a re-run after freeing space asks
    none of them again."""

    def __init__(self, part: Path, error: BaseException, verdicts: pl.DataFrame) -> None:
        full = is_disk_full(error)
        why = f"{describe_disk(part.parent)} ({error})" if full else str(error)
        super().__init__(
            errno.ENOSPC if full else getattr(error, "errno", None),
            f"could not write {part}: {why}; its {verdicts.height} verdict rows are in this error's .verdicts, "
            "and every answer is kept by the response cache: free space and re-run to continue without "
            "asking any of them again",
        )
        self.verdicts = verdicts


MANIFEST = "_manifest.json"


def scan_source(source: Any) -> pl.LazyFrame:
    """A LazyFrame over ``source``: LazyFrame, DataFrame (polars or pandas), or parquet path/glob."""
    if isinstance(source, pl.LazyFrame):
        return source
    if isinstance(source, (str, Path)):
        p = Path(source)
        if p.is_dir():
            return pl.scan_parquet(p / "*.parquet")
        if not any(ch in str(source) for ch in "*?[") and not p.exists():
            raise FileNotFoundError(f"no such parquet file or directory: {p}")
        return pl.scan_parquet(source)
    return to_polars(source).lazy()


def _fingerprint(rubric: Rubric | None, opts: GradeOptions, batch_size: int) -> str:
    judges = opts.model if isinstance(opts.model, (list, tuple)) else [opts.model]
    names = [  # a judge's settings, not only its name: a temperature changed between parts is another run
        j.model_dump(mode="json", exclude={"api_key"})
        if isinstance(j, BaseModel)
        else getattr(j, "label", None) or str(j)
        for j in judges
    ]
    keys = (
        "rubric_column",
        "image_column",
        "max_examples",
        "distribution",
        "distribution_samples",
        "on_null",
        "mode",
        "aggregate",
        "grade_part",
        "evidence",
        "on_unsupported",
        "query_column",
        "reference_column",
        "shuffle_options",
        "seed",
        "thinking_markers",
        "conversation_part",
        "confidence",
        "criterion_context",
        *PAIR_OPTIONS,
    )
    default = GradeOptions()
    settings = {k: getattr(opts, k) for k in keys if getattr(opts, k) != getattr(default, k)}
    payload = {
        "rubric": rubric.to_dict() if rubric is not None else None,
        "judges": names,
        "settings": {k: str(v) for k, v in sorted(settings.items())},
        "output_constraints": [c.model_dump(mode="json") for c in opts.output_constraints],
        "examples": None if opts.examples is None else _examples_text(opts.examples),
        "batch_size": batch_size,
        "column": opts.column,
        "id_column": opts.id_column,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _judge_identity(judge: Any) -> Any:
    """A judge's settings for the fingerprint (never its API key), or its name."""
    if isinstance(judge, BaseModel):
        return judge.model_dump(mode="json", exclude={"api_key"})
    return getattr(judge, "label", None) or str(judge)


def _examples_text(examples: Any) -> str:
    """The few-shot examples as stable text for the fingerprint (a table's rows, or the list)."""
    if isinstance(examples, (pl.DataFrame, pl.LazyFrame)) or hasattr(examples, "to_dict"):
        return json.dumps(to_polars(examples).lazy().collect().to_dicts(), sort_keys=True, default=str)
    return json.dumps(examples, sort_keys=True, default=str)


def _open_manifest(out: Path, fp: str, n: int, batch_size: int, n_parts: int) -> None:
    man_path = out / MANIFEST
    if man_path.exists():
        try:
            old = json.loads(man_path.read_text())
            if not isinstance(old, dict):
                raise ValueError("not a JSON object")
        except ValueError as e:
            raise ValueError(
                f"{man_path} is unreadable ({e}); it records what the parts in {out} were graded with. Delete "
                f"{out} (or just {MANIFEST} and the part files) to start again: the response cache keeps every "
                "answer already paid for"
            ) from None
        if old.get("fingerprint") != fp or old.get("rows") != n:
            raise ValueError(
                f"{out} holds parts graded with other settings (rubric, judges, batch size, columns or input size "
                f"differ: {old.get('rows')} rows before, {n} now); choose another output directory or delete it"
            )
        return
    stale = sorted(out.glob("part-*.parquet"))
    if stale:
        raise ValueError(f"{out} has {len(stale)} parquet part(s) but no {MANIFEST}; refusing to mix them in")
    tmp = man_path.with_suffix(".json.tmp")
    try:
        tmp.write_text(json.dumps({"fingerprint": fp, "rows": n, "batch_size": batch_size, "parts": n_parts}))
        os.replace(tmp, man_path)  # the manifest is either complete or absent
    except OSError as e:  # before any call: nothing is lost, say where and why
        tmp.unlink(missing_ok=True)
        why = describe_disk(out) if is_disk_full(e) else str(e)
        raise OSError(e.errno, f"could not write {man_path}: {why}; no call was made") from e


def _write_part(v: pl.DataFrame, part: Path) -> None:
    tmp = part.with_suffix(".parquet.tmp")
    try:
        v.write_parquet(tmp)
        os.replace(tmp, part)  # a part is either complete or absent
    except (OSError, pl.exceptions.ComputeError) as e:  # polars reports a full disk as a ComputeError
        tmp.unlink(missing_ok=True)
        if not isinstance(e, OSError) and not is_disk_full(e):
            raise
        raise PartWriteError(part, e, v) from e


ROW_ID = "__rt_row"
"""The id column of slices of a source graded without ``id_column``: global row numbers."""


def slice_of(lf: pl.LazyFrame, k: int, size: int, id_column: str | None) -> pl.DataFrame:
    """Slice ``k`` (``size`` rows) of ``lf``; without ``id_column`` it gets a :data:`ROW_ID`
    column of global row numbers, so ids stay unique across slices."""
    chunk = lf.slice(k * size, size).collect()
    if id_column is None:
        chunk = chunk.with_row_index(ROW_ID, offset=k * size).with_columns(pl.col(ROW_ID).cast(pl.Int64))
    return chunk


def _retry_failed(
    part: Path, chunk: pl.DataFrame, rubric: Rubric | None, opts: GradeOptions, hooks: Hooks | None = None
) -> int:
    """Re-grade the submissions of a finished part that have error rows, and rewrite the part
    atomically; returns how many submissions were re-graded."""
    old = pl.read_parquet(part)
    failed = old.filter(pl.col("error").is_not_null())["id"].unique()
    if failed.len() == 0:
        return 0
    id_col = opts.id_column or ROW_ID
    fresh = grade_frame(chunk.filter(pl.col(id_col).is_in(failed.implode())), rubric, opts, hooks=hooks)
    order = chunk.select(pl.col(id_col).alias("id"), pl.int_range(pl.len()).alias("__order"))
    merged = pl.concat([old.filter(~pl.col("id").is_in(failed.implode())), fresh.select(old.columns)], how="vertical")
    merged = merged.join(order, on="id", how="left", maintain_order="left").sort("__order", maintain_order=True)
    _write_part(merged.drop("__order"), part)
    return failed.len()


def stream_parts(
    source: Any,
    rubric: Rubric | None,
    output: str | Path,
    *,
    opts: GradeOptions,
    batch_size: int = 10_000,
    retry_errors: bool = True,
    hooks: Hooks | None = None,
) -> pl.LazyFrame:
    """Grade ``source`` slice by slice into parquet parts under ``output``; see module docstring.
    ``hooks``: the user's ``on_start`` and ``on_result``, as in :func:`rubrictools.grade`.

    Without ``id_column``, ids are global row numbers (``0..n-1`` across slices), so they stay
    unique. On a resume, finished parts are not graded again, except that with
    ``retry_errors=True`` the submissions with error rows (a 429, a timeout, a budget stop...)
    are re-graded and their part rewritten atomically; the response cache answers every call
    of them that had succeeded. Returns a LazyFrame over every part, in input order.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if opts.rubric_column is None and rubric is not None and not isinstance(rubric, Rubric):
        rubric = Rubric.from_dict(rubric)
    lf = scan_source(source)
    schema = lf.collect_schema()
    for name, col in (("column", opts.column), ("pair_column", opts.pair_column), ("id_column", opts.id_column)):
        if col is not None and col not in schema:
            raise ValueError(f"{name}={col!r} is not a column of the source (columns: {list(schema)})")
    n = lf.select(pl.len()).collect().item()
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    n_parts = max(1, -(-n // batch_size))
    slice_opts = opts.replace(progress=False, id_column=opts.id_column or ROW_ID)
    # the settings checked on the first row before the manifest is written (no call made; one row,
    # so the first slice is not planned twice): a refused run leaves nothing behind
    build_plan(slice_of(lf, 0, 1, opts.id_column), rubric, slice_opts)
    _open_manifest(out, _fingerprint(rubric, opts, batch_size), n, batch_size, n_parts)
    bar = progress_bar(n_parts, enabled=opts.progress, desc="parts", unit="part")
    try:
        for k in range(n_parts):
            part = out / f"part-{k:05d}.parquet"
            if not part.exists():
                chunk = slice_of(lf, k, batch_size, opts.id_column)
                _write_part(grade_frame(chunk, rubric, slice_opts, hooks=hooks), part)
            elif retry_errors and pl.scan_parquet(part).select(pl.col("error").is_not_null().any()).collect().item():
                _retry_failed(part, slice_of(lf, k, batch_size, opts.id_column), rubric, slice_opts, hooks)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return pl.scan_parquet(out / "part-*.parquet")

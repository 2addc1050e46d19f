"""The run store: write a record atomically, list records, load one (see :mod:`rubrictools.records`)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import secrets
import shutil
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from rubrictools.stack import user_stacklevel

__all__ = ["RUNS_ENV", "Run", "load_run", "runs", "runs_dir", "write_run"]

RUNS_ENV = "RUBRICTOOLS_RUNS"
"""Environment variable naming the run store used by ``record=True``."""

_DEFAULT = "rubrictools-runs"
_PACKAGES = ("rubrictools", "polars", "numpy", "pydantic", "litellm", "scipy")
LISTED: dict[str, Any] = {
    "id": pl.String,
    "created": pl.Datetime("us", "UTC"),
    "kind": pl.String,
    "judges": pl.List(pl.String),
    "mode": pl.String,
    "rubric_hash": pl.String,
    "criteria": pl.Int64,
    "submissions": pl.Int64,
    "rows": pl.Int64,
    "errors": pl.Int64,
    "cached": pl.Int64,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "cost_usd": pl.Float64,
    "duration_s": pl.Float64,
    "path": pl.String,
}


def runs_dir(record: bool | str | Path | None) -> Path | None:
    """Where ``record=`` writes: ``True`` -> ``$RUBRICTOOLS_RUNS`` or ``./rubrictools-runs``; a
    path -> that path; ``False``/``None`` -> nowhere."""
    if record is None or record is False:
        return None
    if record is True:
        return _store(None)
    if isinstance(record, (str, Path)):
        return Path(record)
    raise TypeError(f"record must be True, False or a folder path; got {record!r}")


def _store(root: str | Path | None) -> Path:
    """``root``, or where ``record=True`` writes."""
    return Path(root) if root is not None else Path(os.environ.get(RUNS_ENV) or _DEFAULT)


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:  # read from installed metadata: nothing is imported
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _counts(v: pl.DataFrame) -> dict[str, Any]:
    def total(name: str, dtype: Any) -> Any:
        return v.select(pl.col(name).cast(dtype).sum()).item() if name in v.columns else None

    judged = v.filter(pl.col("judge") != "ensemble") if "judge" in v.columns else v
    return {
        "rows": v.height,
        "submissions": v["id"].n_unique() if "id" in v.columns else None,
        "criteria": v["criterion"].n_unique() if "criterion" in v.columns else None,
        "errors": int(judged["error"].is_not_null().sum()) if "error" in v.columns else 0,
        "cached": total("cached", pl.Int64),
        "prompt_tokens": total("prompt_tokens", pl.Int64),
        "completion_tokens": total("completion_tokens", pl.Int64),
        "cost_usd": total("cost_usd", pl.Float64),
    }


def write_run(
    root: str | Path,
    *,
    kind: str,
    started: datetime,
    finished: datetime,
    settings: dict[str, Any],
    judges: list[dict[str, Any]],
    rubrics: list[Any],
    request_hash: str,
    prompt_template_version: int,
    inputs: pl.DataFrame,
    verdicts: pl.DataFrame,
    examples: pl.DataFrame | None = None,
) -> str:
    """Write one run record under ``root`` and return its id. Written in ``.tmp-<id>`` and
    renamed into place when complete: a record is listed whole or not at all."""
    root = Path(root)
    run_id = f"{started.astimezone(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    tmp = root / f".tmp-{run_id}"
    tmp.mkdir(parents=True)
    try:
        manifest = {
            "id": run_id,
            "kind": kind,
            "created": started.astimezone(UTC).isoformat(),
            "finished": finished.astimezone(UTC).isoformat(),
            "duration_s": (finished - started).total_seconds(),
            "rubrics": rubrics,
            "rubric_hash": _digest(rubrics),
            "judges": judges,
            "settings": settings,
            "prompt_template_version": prompt_template_version,
            "request_hash": request_hash,
            "versions": _versions(),
            "counts": _counts(verdicts),
        }
        inputs.write_parquet(tmp / "inputs.parquet")
        verdicts.write_parquet(tmp / "verdicts.parquet")
        if examples is not None:
            examples.write_parquet(tmp / "examples.parquet")
        with open(tmp / "run.json", "w") as f:
            json.dump(manifest, f, indent=2, default=str)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, root / run_id)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return run_id


def _manifests(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    return _read_manifests(root)[0]


def _read_manifests(root: Path) -> tuple[list[tuple[Path, dict[str, Any]]], list[tuple[Path, str]]]:
    """The readable run records under ``root``, and the damaged ones with why."""
    out, damaged = [], []
    for path in sorted(root.glob("*/run.json")) if root.is_dir() else []:
        if path.parent.name.startswith("."):
            continue  # an unfinished record (a run killed while writing it)
        try:
            m = json.loads(path.read_text())
            if not isinstance(m, dict) or not {"id", "created"} <= set(m):
                raise ValueError("not a run manifest (no 'id' and 'created')")
            datetime.fromisoformat(m["created"])
            gone = [f for f in ("inputs.parquet", "verdicts.parquet") if not (path.parent / f).is_file()]
            if gone:
                raise FileNotFoundError(f"{', '.join(gone)} missing")
            out.append((path.parent, m))
        except (OSError, ValueError, TypeError) as e:  # JSONDecodeError is a ValueError
            damaged.append((path.parent, f"{type(e).__name__}: {e}"))
    return out, damaged


def _warn_damaged(damaged: list[tuple[Path, str]]) -> None:
    if damaged:
        listed = "; ".join(f"{p}/run.json ({why})" for p, why in damaged[:3])
        warnings.warn(
            f"{len(damaged)} run record(s) could not be read and are left out: {listed}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def runs(root: str | Path | None = None) -> pl.DataFrame:
    """Every recorded run under ``root`` (default: where ``record=True`` writes), newest last.

    Parameters
    ----------
    root
        The run store to list (default ``None``: ``$RUBRICTOOLS_RUNS``, else
        ``./rubrictools-runs``, where ``record=True`` writes).

    Returns
    -------
    polars.DataFrame
        One row per run: ``id, created, kind, judges, mode, rubric_hash`` (first 12 hex
        digits), ``criteria, submissions, rows, errors, cached, prompt_tokens,
        completion_tokens, cost_usd, duration_s, path``.

    Example
    -------
    >>> import tempfile, rubrictools as rt
    >>> rt.runs(tempfile.mkdtemp()).height
    0
    """
    where = _store(root)
    if root is not None and not where.is_dir():
        warnings.warn(f"no run store at {where} (no such folder): no runs", UserWarning, stacklevel=user_stacklevel())
    found, damaged = _read_manifests(where)
    _warn_damaged(damaged)
    rows = []
    for path, m in found:
        c = m.get("counts", {})
        rows.append(
            {
                "id": m["id"],
                "created": datetime.fromisoformat(m["created"]),
                "kind": m.get("kind"),
                "judges": [j.get("label") for j in m.get("judges", [])],
                "mode": m.get("settings", {}).get("mode"),
                "rubric_hash": str(m.get("rubric_hash", ""))[:12],
                **{k: c.get(k) for k in ("criteria", "submissions", "rows", "errors", "cached")},
                **{k: c.get(k) for k in ("prompt_tokens", "completion_tokens", "cost_usd")},
                "duration_s": m.get("duration_s"),
                "path": str(path),
            }
        )
    return pl.DataFrame(rows, schema=LISTED).sort("created", "id")


@dataclass(frozen=True)
class Run:
    """A recorded run: its manifest (``info``), inputs, verdict table and few-shot examples."""

    id: str
    path: Path
    info: dict[str, Any]
    inputs: pl.DataFrame
    verdicts: pl.DataFrame
    examples: pl.DataFrame | None = None

    @property
    def rubric(self) -> Any:
        """The run's rubric as recorded (a dict/list for ``Rubric.from_dict``), or None when
        each row had its own (``rubric_column``)."""
        rubrics = self.info.get("rubrics", [])
        return rubrics[0] if len(rubrics) == 1 and self.info["settings"].get("rubric_column") is None else None

    def __repr__(self) -> str:
        c = self.info.get("counts", {})
        judges = ", ".join(str(j.get("label")) for j in self.info.get("judges", []))
        counts = f"rows={c.get('rows')}, errors={c.get('errors')}"
        return f"Run({self.id!r}, {self.info.get('kind')}, judges=[{judges}], {counts})"


def load_run(run: str, *, root: str | Path | None = None) -> Run:
    """The recorded run ``run`` (its id, a unique prefix of it, or ``"last"``) under ``root``.

    Parameters
    ----------
    run
        The run's id, a unique prefix of it, or ``"last"`` (the newest readable record).
    root
        The run store (``None``: where ``record=True`` writes, ``$RUBRICTOOLS_RUNS`` or
        ``./rubrictools-runs``).

    Returns
    -------
    Run
        Its manifest (``info``: settings, judges, rubric, counts, versions), inputs, verdict
        table and few-shot examples. A missing, ambiguous or damaged record raises
        ``LookupError``.

    Example
    -------
    >>> import tempfile, rubrictools as rt
    >>> rt.load_run("last", root=tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    LookupError: no recorded run under ...
    """
    where = _store(root)
    found, damaged = _read_manifests(where)
    broken = [(p, why) for p, why in damaged if run != "last" and p.name.startswith(run)]
    if broken and not any(m["id"] == run or m["id"].startswith(run) for _, m in found):
        p, why = broken[0]
        raise LookupError(f"run {run!r}: its record {p}/run.json is damaged ({why})")
    _warn_damaged(damaged)
    if not found:
        raise LookupError(f"no recorded run under {where.resolve()}")
    if run == "last":
        path, info = max(found, key=lambda t: (t[1]["created"], t[1]["id"]))
        newer = [p for p, _ in damaged if p.stat().st_mtime > path.stat().st_mtime]
        if newer:  # "last" would silently be an older run
            warnings.warn(
                f"load_run('last'): the newest record {newer[-1]}/run.json is damaged; returning {info['id']!r}, "
                "the newest readable one",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
    else:
        hits = [(p, m) for p, m in found if m["id"] == run] or [(p, m) for p, m in found if m["id"].startswith(run)]
        if len(hits) != 1:
            some = ", ".join(m["id"] for _, m in found[-5:])
            raise LookupError(
                f"{'no' if not hits else len(hits)} recorded run(s) match {run!r} under {where} (latest: {some})"
            )
        path, info = hits[0]
    shots = path / "examples.parquet"
    return Run(
        info["id"],
        path,
        info,
        _table(path / "inputs.parquet", info["id"]),
        _table(path / "verdicts.parquet", info["id"]),
        _table(shots, info["id"]) if shots.exists() else None,
    )


def _table(path: Path, run_id: str) -> pl.DataFrame:
    """A table of a run record; a damaged one is named, never a parquet reader's traceback."""
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as e:
        raise LookupError(
            f"run {run_id!r}: its record's {path.name} cannot be read ({type(e).__name__}: {e})"
        ) from None

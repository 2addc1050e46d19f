"""`compare_runs`: did the change make a difference, and is it real? Two runs, paired by submission."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from rubrictools.deprecation import adapted, renamed
from rubrictools.frames import to_polars
from rubrictools.metrics import resampling as bs
from rubrictools.metrics.resampling import check_names, check_resampling
from rubrictools.records import Run, load_run
from rubrictools.rubric import Rubric
from rubrictools.rubric.scoring import score, select_judge
from rubrictools.stack import user_stacklevel
from rubrictools.tables import format_p_value

__all__ = ["OVERALL", "RunComparison", "compare_runs", "judge_rows", "open_run", "with_values"]

OVERALL = "overall score"
"""The ``criterion`` of the overall score's row in :attr:`RunComparison.summary`."""


@dataclass(frozen=True)
class RunComparison:
    """What changed between run ``a`` and run ``b`` (``change`` is always ``b - a``).

    * ``summary``: one row for the overall score and one per shared criterion: ``criterion,
      mean_a, mean_b, change, ci_low, ci_high, p_value, n`` (the means over the ``n``
      submissions both runs scored, so ``change = mean_b - mean_a``; a criterion's mean is its
      verdict value, 1 = MET);
    * ``scores``: ``id, score_a, score_b, change`` per submission graded in both;
    * ``flips``: the verdicts that changed: ``id, criterion, verdict_a, verdict_b,
      explanation_a, explanation_b``;
    * ``costs``: ``measure, a, b, change`` for calls, errors, cached answers, tokens, dollars
      and latency;
    * ``only_a`` / ``only_b``: ids graded in one run only (left out of the pairing);
    * ``criteria_only_a`` / ``criteria_only_b``: criteria graded in one run only (no row of
      their own: only the overall score counts them), and a ``note`` column in ``summary``
      says where the two rubrics differ (``"rubrics differ"`` on the overall score's row,
      ``"requirement changed"`` / ``"weight changed"`` on a criterion's), with a warning;
      a ``penalty`` column is true for a criterion with a negative weight (a rise in its MET
      share lowers the score), null where no rubric says.
    """

    names: tuple[str, str]
    summary: pl.DataFrame
    scores: pl.DataFrame
    flips: pl.DataFrame
    costs: pl.DataFrame
    only_a: list[Any]
    only_b: list[Any]
    criteria_only_a: list[str]
    criteria_only_b: list[str]

    def __repr__(self) -> str:
        row = self.summary.row(0, named=True)
        b, a = self.names[1], self.names[0]
        pv = row["p_value"]
        p = "p n/a" if pv is None else ("p " if pv < 0.001 else "p = ") + format_p_value(pv)
        change = "n/a" if row["change"] is None else f"{row['change']:+.4f}"
        lo, hi = row["ci_low"], row["ci_high"]
        ci = "" if lo is None or hi is None else f" [{lo:+.4f}, {hi:+.4f}]"  # n_resamples=0: no interval
        return f"RunComparison({b} - {a}: score {change}{ci}, {p}, n={row['n']}; {self.flips.height} verdict flips)"


def open_run(run: Any, root: Any) -> tuple[pl.DataFrame, Any, dict[str, Any]]:
    """(verdicts, recorded rubric or None, manifest) of a run id (in the store at ``root``), a
    :class:`~rubrictools.records.Run` or a verdict table."""
    if isinstance(run, str):
        run = load_run(run, root=root)
    if isinstance(run, Run):
        return run.verdicts, run.rubric, run.info
    return to_polars(run, name="run"), None, {}


def judge_rows(v: pl.DataFrame, judge: str | None) -> pl.DataFrame:
    """The rows that decide each (submission, criterion), as :func:`rubrictools.score` picks
    them (:func:`~rubrictools.rubric.scoring.select_judge`); a table without a ``judge``
    column is one judge's."""
    return select_judge(v, judge) if "judge" in v.columns else v


def with_values(v: pl.DataFrame, rubric: Rubric | None) -> pl.DataFrame:
    """``v`` with a ``value`` column: each verdict's value in ``rubric`` (1 = MET) when given, so
    a revalued option counts as the rubric says, else as graded."""
    if rubric is None:
        if "value" in v.columns:
            return v
        raise ValueError("the verdict table has no 'value' column: pass rubric= to read the verdicts' values")
    labels = rubric.label_frame().select("criterion", pl.col("label").alias("verdict"), pl.col("value").alias("__v"))
    joined = v.join(labels, on=["criterion", "verdict"], how="left", maintain_order="left")
    kept = pl.coalesce("__v", "value") if "value" in v.columns else pl.col("__v")  # a number on a scale: as graded
    return joined.with_columns(kept.alias("value")).drop("__v")


def _paired_bootstrap(
    d: np.ndarray, mask: np.ndarray, weights: np.ndarray | None, ci: float
) -> list[tuple[float, float, float, float]]:
    """For each column of ``d`` (submissions x groups, ``mask`` where defined): the mean
    change and its percentile interval and two-sided p-value over the resampled submissions
    (``(1 + #{|m* - m| >= |m|}) / (B + 1)``, as :func:`rubrictools.compare`)."""
    dz = np.where(mask, d, 0.0)
    m = mask.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = dz.sum(0) / m.sum(0)
        boot = (weights @ dz) / (weights @ m) if weights is not None else None
    out = []
    for g in range(d.shape[1]):
        if boot is None or not np.isfinite(point[g]):
            out.append((float(point[g]), float("nan"), float("nan"), float("nan")))
            continue
        iv = bs.interval(float(point[g]), boot[:, g], ci=ci)
        out.append((float(point[g]), iv.low, iv.high, bs.p_value(float(point[g]), boot[:, g])))
    return out


def _costs(va: pl.DataFrame, vb: pl.DataFrame, ia: dict[str, Any], ib: dict[str, Any]) -> pl.DataFrame:
    def measures(v: pl.DataFrame, info: dict[str, Any]) -> dict[str, float | None]:
        judged = v.filter(~pl.col("judge").is_in(["ensemble", "rule"])) if "judge" in v.columns else v

        def agg(expr: pl.Expr, needs: str) -> float | None:
            return judged.select(expr).item() if needs in judged.columns else None

        fresh = ~pl.col("cached") if "cached" in judged.columns else pl.lit(True)
        if "attempts" in judged.columns:  # a scripted judge makes no call: no latency to average (null, not 0)
            fresh = fresh & (pl.col("attempts") > 0)
        return {
            "verdict rows from the judge": float(judged.height),
            "errors": agg(pl.col("error").is_not_null().sum().cast(pl.Float64), "error"),
            "cached answers": agg(pl.col("cached").sum().cast(pl.Float64), "cached"),
            "prompt tokens": agg(pl.col("prompt_tokens").sum().cast(pl.Float64), "prompt_tokens"),
            "completion tokens": agg(pl.col("completion_tokens").sum().cast(pl.Float64), "completion_tokens"),
            "cost (USD)": agg(pl.col("cost_usd").sum(), "cost_usd"),
            "mean latency, fresh calls (s)": agg(pl.col("latency_s").filter(fresh).mean(), "latency_s"),
            "run duration (s)": info.get("duration_s"),
        }

    ma, mb = measures(va, ia), measures(vb, ib)
    rows = []
    for k in ma:
        x, y = ma[k], mb[k]
        rows.append({"measure": k, "a": x, "b": y, "change": None if x is None or y is None else y - x})
    return pl.DataFrame(rows, schema={"measure": pl.String, "a": pl.Float64, "b": pl.Float64, "change": pl.Float64})


def _flips(va: pl.DataFrame, vb: pl.DataFrame, shared: list[str]) -> pl.DataFrame:
    cols = [c for c in ("verdict", "explanation") if c in va.columns and c in vb.columns]
    a = va.filter(pl.col("criterion").is_in(shared)).select("id", "criterion", *cols)
    b = vb.filter(pl.col("criterion").is_in(shared)).select("id", "criterion", *cols)
    both = a.join(b, on=["id", "criterion"], how="inner", suffix="_b").rename({c: f"{c}_a" for c in cols})
    return both.filter(pl.col("verdict_a").ne_missing(pl.col("verdict_b"))).select(
        "id", "criterion", *[f"{c}_{s}" for c in cols for s in "ab"]
    )


@adapted(renamed(bootstrap="n_resamples"))
def compare_runs(
    a: Any,
    b: Any,
    *,
    rubric: Rubric | None = None,
    rubric_b: Rubric | None = None,
    judge: str | None = None,
    names: tuple[str, str] = ("a", "b"),
    root: Any = None,
    n_resamples: int = 2000,
    ci: float = 0.95,
    seed: int | None = 0,
) -> RunComparison:
    """Compare two grading runs submission by submission: ``change = b - a``.

    The runs may differ in judge, rubric, prompt or the system whose outputs were graded:
    submissions pair by ``id``. The overall score change is the mean over paired submissions of
    ``score_b - score_a`` (:func:`rubrictools.score`); each criterion both runs graded gets
    the mean change of its verdict value. Intervals resample submissions (a cluster
    bootstrap: one draw keeps all of a submission's criteria), with the same draws for every
    row; ``p_value`` is two-sided against no change.

    Parameters
    ----------
    a, b
        The two runs: run ids (or ``"last"``, or unique prefixes) in the store at ``root``,
        :class:`~rubrictools.records.Run` objects, or verdict tables.
    rubric, rubric_b
        Each run is scored with its own recorded rubric. ``rubric`` overrides or supplies run
        ``a``'s, and serves ``b`` too when ``b`` has none recorded (a verdict table) and no
        ``rubric_b`` is given; ``rubric_b`` overrides or supplies run ``b``'s (and needs a rubric
        for ``a``). Without a rubric, a verdict table's own ``value`` and ``weight`` columns are
        used.
    judge
        With ensembles the ensemble rows are compared; ``judge=`` picks one judge's rows
        instead (as :func:`rubrictools.score` does).
    names
        Labels of the two runs (two different strings, default ``("a", "b")``), used in the
        result's ``repr`` and in warnings.
    root
        The run store to look run ids up in (``None``: where ``record=True`` writes,
        ``$RUBRICTOOLS_RUNS`` or ``./rubrictools-runs``).
    n_resamples, ci, seed
        The bootstrap's resamples (``0``: point estimates only, intervals and ``p_value``
        null); the interval level (written to the summary's ``ci_level`` column); its seed
        (``0`` by default: identical calls give identical intervals; ``None`` draws afresh).

    Returns
    -------
    RunComparison
        ``summary`` (the overall score's and each shared criterion's change with its interval
        and ``p_value``), ``scores`` (per submission), ``flips`` (the verdicts that changed),
        ``costs``, and the ids and criteria graded in one run only; see
        :class:`~rubrictools.comparison.runs.RunComparison`.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rub = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> df = pl.DataFrame({"submission": ["hello", "hi", "bye", "hello you"]})
    >>> strict = rt.grade(df, rub, model=rt.ScriptedJudge(rule=lambda t, c: "MET" if "hello" in t else "UNMET"),
    ...                   progress=False, record=False)
    >>> lenient = rt.grade(df, rub, model=rt.ScriptedJudge(rule=lambda t, c: "UNMET" if "bye" in t else "MET"),
    ...                    progress=False, record=False)
    >>> cmp = rt.compare_runs(strict, lenient, rubric=rub, names=("strict", "lenient"), n_resamples=200)
    >>> cmp.summary.select("criterion", "mean_a", "mean_b", "change").rows()
    [('overall score', 0.5, 0.75, 0.25), ('greets', 0.5, 0.75, 0.25)]
    >>> cmp.flips.select("id", "verdict_a", "verdict_b").rows()
    [(1, 'UNMET', 'MET')]
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed)
    check_names(names)
    va, ra, ia = open_run(a, root)
    vb, rb, ib = open_run(b, root)
    if ia.get("id") is not None and ia.get("id") == ib.get("id"):
        warnings.warn(
            f"compare_runs: a and b are the same run ({ia['id']}): every change is 0",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    rubric, rubric_b = (_as_rubric(r, n) for r, n in ((rubric, "rubric"), (rubric_b, "rubric_b")))
    if rubric is None and ra is None and rubric_b is not None:
        raise ValueError("rubric_b= without rubric=: run a would be scored by its table's weights; pass rubric= too")
    rub_a = rubric if rubric is not None else (Rubric.from_dict(ra) if ra is not None else None)
    rub_b = rubric_b if rubric_b is not None else (Rubric.from_dict(rb) if rb is not None else rub_a)
    if va.schema["id"] != vb.schema["id"]:
        raise ValueError(f"the runs' ids are of different types ({va.schema['id']} and {vb.schema['id']}): cast one")
    va = with_values(judge_rows(va, judge), rub_a)
    vb = with_values(judge_rows(vb, judge), rub_b)
    sa = score(va, rub_a).select("id", pl.col("score").alias("score_a"))
    sb = score(vb, rub_b).select("id", pl.col("score").alias("score_b"))
    scores = sa.join(sb, on="id", how="inner", maintain_order="left").with_columns(
        (pl.col("score_b") - pl.col("score_a")).alias("change")
    )
    if scores.height == 0:
        raise ValueError("the two runs share no submission id: nothing to pair")
    only_a = sa.join(sb, on="id", how="anti")["id"].to_list()
    only_b = sb.join(sa, on="id", how="anti")["id"].to_list()
    if only_a or only_b:
        warnings.warn(
            f"compare_runs: {scores.height} submissions pair; {len(only_a)} graded in {names[0]} only and "
            f"{len(only_b)} in {names[1]} only are left out (see .only_a / .only_b)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    shared = [c for c in va["criterion"].unique(maintain_order=True) if c in set(vb["criterion"])]
    per = (
        va.filter(pl.col("criterion").is_in(shared))
        .select("id", "criterion", pl.col("value").alias("a"))
        .join(vb.select("id", "criterion", pl.col("value").alias("b")), on=["id", "criterion"], how="inner")
        .with_columns((pl.col("b") - pl.col("a")).alias("d"))
    )
    ids = scores.select("id")
    wide = ids.join(per.pivot(on="criterion", index="id", values="d"), on="id", how="left", maintain_order="left")
    d = np.column_stack([scores["change"].to_numpy(), *[wide[c].to_numpy() for c in shared if c in wide.columns]])
    crits = [OVERALL, *[c for c in shared if c in wide.columns]]
    d = d.astype(float)
    weights = bs.cluster_weights(ids.height, n_resamples, seed=seed) if n_resamples else None
    stats = _paired_bootstrap(d, np.isfinite(d), weights, ci)
    # the means cover the submissions the change covers: both sides scored (a failed call leaves one out)
    both = pl.col("score_a").is_not_null() & pl.col("score_b").is_not_null()
    means = [scores.filter(both).select(pl.col("score_a").mean(), pl.col("score_b").mean()).row(0)]
    paired = per.filter(pl.col("a").is_not_null() & pl.col("b").is_not_null())
    for c in crits[1:]:
        means.append(paired.filter(pl.col("criterion") == c).select(pl.col("a").mean(), pl.col("b").mean()).row(0))
    summary = pl.DataFrame(
        [
            {
                "criterion": c,
                "mean_a": m[0],
                "mean_b": m[1],
                "change": s[0],
                "ci_low": s[1],
                "ci_high": s[2],
                "p_value": s[3],
                "n": int(np.isfinite(d[:, i]).sum()),
            }
            for i, (c, m, s) in enumerate(zip(crits, means, stats, strict=True))
        ]
    ).with_columns(pl.col("ci_low", "ci_high", "p_value").fill_nan(None))
    summary = bs.with_ci_level(summary, ci)
    only = ([c for c in va["criterion"].unique(maintain_order=True) if c not in shared],
            [c for c in vb["criterion"].unique(maintain_order=True) if c not in shared])  # fmt: skip
    summary = summary.with_columns(_notes(rub_a, rub_b, only, names), _penalties(rub_a, rub_b))
    return RunComparison(names, summary, scores, _flips(va, vb, shared), _costs(va, vb, ia, ib), only_a, only_b, *only)


def _as_rubric(value: Any, name: str) -> Rubric | None:
    if value is None or isinstance(value, Rubric):
        return value
    if isinstance(value, (dict, list)):
        return Rubric.from_dict(value)
    raise TypeError(f"{name} must be an rt.Rubric or a rubric dict/list, got {type(value).__name__}")


def _notes(a: Rubric | None, b: Rubric | None, only: tuple[list[str], list[str]], names: tuple[str, str]) -> pl.Expr:
    """The ``note`` column: where the two runs' rubrics differ (warned about once)."""
    changed: dict[str, str] = {}
    if a is not None and b is not None:
        for c in a:
            if c.name in b.names and (other := b[c.name or ""]) != c:
                what = (
                    "requirement"
                    if other.requirement != c.requirement
                    else "weight"
                    if other.weight != c.weight
                    else ""
                )
                changed[c.name or ""] = f"{what or 'definition'} changed"
    differ = bool(changed or only[0] or only[1])
    if differ:
        parts = [f"{n}: {what}" for n, what in changed.items()]
        parts += [f"only in {names[0]}: {only[0]}"] * bool(only[0]) + [f"only in {names[1]}: {only[1]}"] * bool(only[1])
        warnings.warn(
            f"compare_runs: the runs' rubrics differ ({'; '.join(parts)}): the overall score compares different "
            "rubrics, and criteria graded in one run only have no row",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    note = pl.col("criterion").replace_strict(changed, default=None, return_dtype=pl.String)
    if differ:
        note = pl.when(pl.col("criterion") == OVERALL).then(pl.lit("rubrics differ")).otherwise(note)
    return note.alias("note")


def _penalties(a: Rubric | None, b: Rubric | None) -> pl.Expr:
    """The ``penalty`` column: a criterion whose weight is negative in run b's rubric (else a's)."""
    weights = {c.name or "": c.weight for rub in (a, b) if rub is not None for c in rub}  # b's win: read last
    sign = {name: w < 0 for name, w in weights.items()}
    return pl.col("criterion").replace_strict(sign, default=None, return_dtype=pl.Boolean).alias("penalty")

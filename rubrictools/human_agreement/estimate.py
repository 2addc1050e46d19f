"""Point estimates, cluster-bootstrap intervals and p-values, as tidy rows."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from rubrictools.frames import to_polars
from rubrictools.human_agreement.catalog import KENDALL_MAX_ROWS, Method
from rubrictools.metrics import resampling as bs
from rubrictools.stack import user_stacklevel

__all__ = ["evaluate_kernels", "finite_or_none", "metric_rows", "out_frame", "resampling_plan"]


@dataclass
class _Plan:
    index: pl.DataFrame  # id -> __cluster
    weights: np.ndarray | None
    method: Method
    ci: float


def resampling_plan(
    ids: pl.Series, n_resamples: int, seed: Any, stratify: Any, method: Method, ci: float, human: Any
) -> _Plan:
    index = pl.DataFrame({"id": ids.unique(maintain_order=True)}).with_row_index("__cluster")
    index = index.with_columns(pl.col("__cluster").cast(pl.Int64))
    if not n_resamples:
        return _Plan(index, None, method, ci)
    strata = None
    if stratify is not None:
        if isinstance(stratify, str):
            src = to_polars(human, name="human")
            if stratify not in src.columns:
                raise ValueError(f"stratify={stratify!r} is not a column of the human labels")
            st = src.group_by("id").agg(pl.col(stratify).first().alias("__stratum"))
        else:
            st = to_polars(stratify, name="stratify")
            other = [c for c in st.columns if c != "id"]
            if "id" not in st.columns or len(other) != 1:
                raise ValueError("stratify must be a column name or a DataFrame with 'id' and one stratum column")
            st = st.select("id", pl.col(other[0]).alias("__stratum"))
        joined = index.join(st, on="id", how="left", maintain_order="left")
        if joined["__stratum"].null_count():
            raise ValueError("stratify: some submissions have no stratum")
        strata = joined["__stratum"].cast(pl.String).to_numpy()
    weights = bs.cluster_weights(index.height, n_resamples, seed=seed, strata=strata)
    return _Plan(index, weights, method, ci)


def evaluate_kernels(kernels: list[bs.Kernel], clusters: np.ndarray, plan: _Plan) -> dict[str, bs.Interval]:
    out: dict[str, bs.Interval] = {}
    for kern in kernels:
        weights = plan.weights
        distinct = getattr(kern.finish, "distinct_pairs", 0)
        if weights is not None and distinct > KENDALL_MAX_ROWS:
            warnings.warn(
                f"kendall: no bootstrap interval for {distinct} distinct (x, y) pairs (costs O(B n^2)); "
                f"point estimate only",
                stacklevel=user_stacklevel(),
            )
            weights = None
        out.update(bs.bootstrap(kern, clusters, weights, ci=plan.ci, method=plan.method))
    return out


def metric_rows(
    group: dict[str, Any],
    names: list[str],
    res: dict[str, bs.Interval],
    pvals: dict[str, float],
    n: int,
    n_items: int,
    n_excluded: int,
    kind: str,
    boot: bool,
) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        if name not in res:
            continue
        iv = res[name]
        rows.append(
            {
                **group,
                "metric": name,
                "value": finite_or_none(iv.value),
                "ci_low": finite_or_none(iv.low),
                "ci_high": finite_or_none(iv.high),
                "p_value": finite_or_none(pvals.get(name, float("nan"))),
                "n": n,
                "n_items": n_items,
                "n_excluded": n_excluded,
                "n_degenerate": iv.n_degenerate if boot and iv.n_resamples else None,
                "kind": kind,
            }
        )
    return rows


def finite_or_none(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def out_frame(rows: list[dict[str, Any]], by: list[str], group_dtypes: dict[str, pl.DataType]) -> pl.DataFrame:
    schema: dict[str, Any] = {c: group_dtypes.get(c, pl.String) for c in by}
    schema.update(
        metric=pl.String,
        value=pl.Float64,
        ci_low=pl.Float64,
        ci_high=pl.Float64,
        p_value=pl.Float64,
        n=pl.Int64,
        n_items=pl.Int64,
        n_excluded=pl.Int64,
        n_degenerate=pl.Int64,
        kind=pl.String,
    )
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)

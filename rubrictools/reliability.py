"""How well does the judge agree with people, and people with each other? With honest intervals.

* :func:`agreement` joins a verdict table with human labels and returns one row per group
  (criterion, by default) and metric, with a cluster-bootstrap interval;
* :func:`inter_rater` measures agreement among several human raters (the ceiling a judge
  can be expected to reach);
* :func:`compare` bootstraps the difference of a metric between two judges (or rubrics)
  on the same items, with an interval and a p-value.

Human labels are a long DataFrame ``id, criterion, label[, rater]``. Labels are matched to
the rubric's options case- and space-insensitively; without a rubric they are read as
binary (MET/UNMET), numeric (ordinal, e.g. 1-5 ratings) or nominal strings.

All three share one resampling plan: submissions (``id``) are drawn with replacement
(optionally within strata), the same draws serve every criterion and metric, and metrics
are evaluated from sufficient statistics for all resamples at once
(:mod:`rubrictools.metrics.bootstrap`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from rubrictools.metrics import resampling as bs
from rubrictools.metrics.classification import (
    accuracy_from_confusion,
    mcc_from_confusion,
    precision_recall_f1_from_confusion,
)
from rubrictools.metrics.correlation import distinct_pairs, kendall_weighted, pearson_weighted, spearman_weighted
from rubrictools.metrics.distribution import cdf_distances_weighted, js_from_counts
from rubrictools.metrics.errors import error_stats, errors_from_stats, rmse_affine_weighted
from rubrictools.metrics.kappa import (
    ac1_from_confusion,
    chance_corrected_from_unit_stats,
    kappa_from_confusion,
    kappa_test_from_confusion,
    unit_agreement_stats,
)
from rubrictools.metrics.multirater import alpha_from_stats, alpha_unit_stats, icc_from_stats, icc_unit_stats
from rubrictools.verdicts import HOLISTIC, to_polars

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.rubric import Rubric

__all__ = ["CRITERION_METRICS", "INTER_RATER_METRICS", "SCORE", "SCORE_METRICS", "agreement", "compare", "inter_rater"]

SCORE = "__score__"
"""Group label of score-level rows (rubric score of the judge vs of the human)."""

DEFAULT_METRICS: dict[str, tuple[str, ...]] = {
    "binary": ("accuracy", "precision", "recall", "f1", "mcc", "cohen_kappa", "gwet_ac1", "judge_rate", "human_rate"),
    "ordinal": ("accuracy", "cohen_kappa", "kappa_linear", "kappa_quadratic", "spearman", "kendall", "mae", "js_divergence"),
    "nominal": ("accuracy", "f1_macro", "cohen_kappa", "gwet_ac1", "js_divergence"),
}
CRITERION_METRICS: tuple[str, ...] = (
    "accuracy", "precision", "recall", "f1", "f1_macro", "mcc", "cohen_kappa", "kappa_linear",
    "kappa_quadratic", "gwet_ac1", "spearman", "kendall", "mae", "judge_rate", "human_rate", "js_divergence",
)  # fmt: skip
SCORE_METRICS: tuple[str, ...] = (
    "pearson", "spearman", "kendall", "rmse", "mae", "bias", "effect_size", "wasserstein", "ks", "rmse_affine",
)  # fmt: skip
_OPT_IN = {"rmse_affine"}  # asked for by name only
INTER_RATER_METRICS: tuple[str, ...] = (
    "fleiss_kappa", "gwet_ac1", "percent_agreement", "krippendorff_alpha", "cohen_kappa_pairwise", "icc2", "icc3",
)  # fmt: skip
_ORDERED_ONLY = {"kappa_linear", "kappa_quadratic", "spearman", "kendall", "mae", "icc2", "icc3"}
_BINARY_ONLY = {"precision", "recall", "f1", "judge_rate", "human_rate"}
_PVALUE = {"cohen_kappa", "pearson", "spearman", "kendall", "bias", "ks"}
_KENDALL_MAX_ROWS = 5000
_NA_TOKENS = ("cannot_assess", "cannot assess", "na", "n/a", "not applicable", "none")

NaMode = Literal["exclude", "as_category", "as_worst"]
Raters = Literal["each", "consensus"]
Level = Literal["criterion", "score", "both"]
Method = Literal["percentile", "bca"]


# =============================================================================== labels
def _key(expr: pl.Expr) -> pl.Expr:
    """Normalised label: numbers as canonical floats, text lower-cased with collapsed spaces."""
    s = expr.cast(pl.String)
    f = s.str.strip_chars().cast(pl.Float64, strict=False)
    text = s.str.replace_all(r"\s+", " ").str.strip_chars().str.to_lowercase()
    return pl.when(f.is_not_null()).then(f.cast(pl.String)).otherwise(text)


def _with_key(df: pl.DataFrame, col: str, out: str) -> pl.DataFrame:
    """Add the normalised label of ``col`` as ``out``, computed once per distinct label."""
    if df.height == 0:
        return df.with_columns(_key(pl.col(col)).alias(out))
    uniq = df.select(pl.col(col).unique()).with_columns(_key(pl.col(col)).alias(out))
    return df.join(uniq, on=col, how="left", nulls_equal=True, maintain_order="left")


def _key_py(label: str) -> str:
    """:func:`_key` for one Python string (rubric option labels)."""
    from rubrictools.rubric import normalize_label

    try:
        return str(float(label.strip()))
    except ValueError:
        return normalize_label(label)


_LABEL_SCHEMA = {
    "criterion": pl.String,
    "key": pl.String,
    "code": pl.Int64,
    "value": pl.Float64,
    "kind": pl.String,
    "n_classes": pl.Int64,
    "pos_code": pl.Int64,
    "classes": pl.List(pl.String),
}


def _label_table(rubric: Rubric | None, keys: pl.DataFrame, na: NaMode) -> pl.DataFrame:
    """One row per (criterion, label key): integer code in ordinal order, value, kind.

    ``keys`` holds the distinct ``criterion, key`` pairs of the data (only needed without a
    rubric). NA keys get code ``n_classes`` under ``as_category``, the worst option's code
    under ``as_worst`` and a null code under ``exclude``.
    """
    rows: list[dict[str, Any]] = []

    def add(criterion: str, entries: list[tuple[str, float | None, str]], kind: str, worst: int | None) -> None:
        # entries: (key, value or None for NA, display label) in code order for non-NA
        real = [e for e in entries if e[1] is not None]
        k = len(real)
        classes = [e[2] for e in real]
        has_na = any(e[1] is None for e in entries)
        if na == "as_category" and has_na:
            classes = [*classes, "NA"]
        pos = next((i for i, e in enumerate(real) if e[0] == "met"), None)
        for i, (key, value, _) in enumerate(real):
            rows.append(dict(criterion=criterion, key=key, code=i, value=value, kind=kind,
                             n_classes=len(classes), pos_code=pos, classes=classes))  # fmt: skip
        for key, value, _ in entries:
            if value is None:
                code = k if na == "as_category" else (worst if na == "as_worst" else None)
                val = None if code is None or code >= k else real[code][1]
                rows.append(dict(criterion=criterion, key=key, code=code, value=val, kind=kind,
                                 n_classes=len(classes), pos_code=pos, classes=classes))  # fmt: skip

    if rubric is not None:
        unknown = set(keys["criterion"].unique().to_list()) - set(rubric.names) - {HOLISTIC}
        if unknown:
            raise ValueError(f"criteria {sorted(unknown)[:5]} are not in the rubric {list(rubric.names)}")
        for c in rubric:
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
            nas = [(k, None, k) for k in ks if k in _NA_TOKENS]
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
                add(crit, [(k, nums[k], k) for k in order] + nas, "ordinal", 0)
            else:
                add(crit, [(k, float(i), k) for i, k in enumerate(sorted(real))] + nas, "nominal", 0)
    if not rows:
        return pl.DataFrame(schema=_LABEL_SCHEMA)
    return pl.DataFrame(rows, schema=_LABEL_SCHEMA)


def _human_frame(human: Any) -> pl.DataFrame:
    h = to_polars(human, name="human")
    if "label" not in h.columns and "verdict" in h.columns:
        h = h.rename({"verdict": "label"})
    missing = [c for c in ("id", "criterion", "label") if c not in h.columns]
    if missing:
        raise ValueError(f"human labels need columns id, criterion, label (optional rater); missing {missing}")
    if "rater" not in h.columns:
        h = h.with_columns(pl.lit("human").alias("rater"))
    h = h.with_columns(pl.col("rater").cast(pl.String), pl.col("criterion").cast(pl.String))
    dup = h.select(pl.struct("id", "criterion", "rater").is_duplicated().any()).item()
    if dup:
        raise ValueError("human labels have several rows for one (id, criterion, rater); add a 'rater' column")
    return h


def _verdict_frame(verdicts: Any, by: list[str]) -> pl.DataFrame:
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


def _mode_consensus(h: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
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


@dataclass
class _Pairs:
    frame: pl.DataFrame  # by..., id, rater, kind, n_classes, pos_code, classes, h_code, j_code, h_value, j_value
    excluded: pl.DataFrame  # by..., n_excluded


def _criterion_pairs(
    verdicts: Any, human: Any, rubric: Rubric | None, by: list[str], na: NaMode, raters: Raters
) -> _Pairs:
    v = _verdict_frame(verdicts, by)
    h = _human_frame(human)
    for c in by:
        if c not in v.columns and c not in h.columns:
            raise ValueError(f"by={c!r} is neither a verdict nor a human-label column")
    v_cols = ["id", "criterion", *[c for c in by if c in v.columns and c not in ("id", "criterion")]]
    v = _with_key(v.select(*v_cols, "verdict", pl.col("error").is_not_null().alias("j_err")), "verdict", "j_key").drop("verdict")
    h = _with_key(h, "label", "h_key")
    keys = pl.concat(
        [v.select("criterion", pl.col("j_key").alias("key")), h.select("criterion", pl.col("h_key").alias("key"))]
    ).unique()
    labels = _label_table(rubric, keys, na)
    lab = labels.select("criterion", "key", "code", "value")
    meta = labels.group_by("criterion").agg(pl.col("kind", "n_classes", "pos_code", "classes").first())

    def check_known(df: pl.DataFrame, col: str, side: str) -> None:
        bad = df.filter(pl.col(col).is_not_null()).join(lab, left_on=["criterion", col], right_on=["criterion", "key"], how="anti")
        if bad.height:
            r = bad.row(0, named=True)
            raise ValueError(
                f"{side}: {bad.height} label(s) not allowed by the rubric; first: id={r['id']!r}, "
                f"criterion={r['criterion']!r}, label={r[col]!r}"
            )

    if rubric is not None:
        check_known(v.filter(~pl.col("j_err")), "j_key", "verdicts")
        check_known(h, "h_key", "human labels")
    h = h.join(lab.rename({"key": "h_key", "code": "h_code", "value": "h_value"}), on=["criterion", "h_key"], how="left")
    h = h.join(meta, on="criterion", how="left")
    h_keys = ["id", "criterion", *[c for c in by if c in h.columns and c not in ("id", "criterion", "rater")]]
    if raters == "consensus":  # ties keep a row with a null code: excluded and counted below
        h = _mode_consensus(h, h_keys)
        h = h.join(meta, on="criterion", how="left")
    v = v.join(lab.rename({"key": "j_key", "code": "j_code", "value": "j_value"}), on=["criterion", "j_key"], how="left")
    on = [c for c in h_keys if c in v.columns]
    joined = h.select(*h_keys, "rater", "kind", "n_classes", "pos_code", "classes", "h_code", "h_value").join(
        v.select(*[c for c in v.columns if c not in ("j_key",)]), on=on, how="left"
    )
    usable = pl.col("h_code").is_not_null() & pl.col("j_code").is_not_null() & ~pl.col("j_err").fill_null(True)
    joined = joined.with_columns(usable.alias("__ok"))
    excl = joined.group_by(by).agg((~pl.col("__ok")).sum().cast(pl.Int64).alias("n_excluded"))
    frame = joined.filter(pl.col("__ok")).drop("__ok", "j_err")
    return _Pairs(frame, excl)


# =============================================================================== kernels
def _confusion_kernel(h: np.ndarray, j: np.ndarray, k: int, pos: int | None, names: list[str]) -> bs.Kernel:
    stats = np.zeros((h.shape[0], k * k))
    stats[np.arange(h.shape[0]), h * k + j] = 1.0

    def finish(tot: np.ndarray) -> dict[str, np.ndarray]:
        cm = tot.reshape(tot.shape[0], k, k)
        out: dict[str, np.ndarray] = {}
        for name in names:
            if name == "accuracy":
                out[name] = accuracy_from_confusion(cm)
            elif name in ("precision", "recall", "f1"):
                p, r, f = precision_recall_f1_from_confusion(cm, average="binary", pos_index=pos)
                out[name] = {"precision": p, "recall": r, "f1": f}[name]
            elif name == "f1_macro":
                out[name] = precision_recall_f1_from_confusion(cm, average="macro")[2]
            elif name == "mcc":
                out[name] = mcc_from_confusion(cm)
            elif name == "cohen_kappa":
                out[name] = kappa_from_confusion(cm)
            elif name == "kappa_linear":
                out[name] = kappa_from_confusion(cm, "linear")
            elif name == "kappa_quadratic":
                out[name] = kappa_from_confusion(cm, "quadratic")
            elif name == "gwet_ac1":
                out[name] = ac1_from_confusion(cm)
            elif name == "js_divergence":
                out[name] = js_from_counts(cm.sum(-1), cm.sum(-2))
            elif name == "judge_rate":
                out[name] = cm[:, :, pos].sum(-1) / np.where(cm.sum((-2, -1)) > 0, cm.sum((-2, -1)), np.nan)
            elif name == "human_rate":
                out[name] = cm[:, pos, :].sum(-1) / np.where(cm.sum((-2, -1)) > 0, cm.sum((-2, -1)), np.nan)
        return out

    return bs.Kernel(tuple(names), finish, stats=stats)


def _kendall_kernel(x: np.ndarray, y: np.ndarray, name: str = "kendall") -> bs.Kernel:
    from scipy.stats import kendalltau

    def point() -> dict[str, float]:
        if x.shape[0] < 2:
            return {name: float("nan")}
        return {name: float(kendalltau(x, y).statistic)}

    def finish(w: np.ndarray) -> dict[str, np.ndarray]:
        return {name: kendall_weighted(x, y, w)}

    finish.distinct_pairs = int(distinct_pairs(x, y)[0].size) if x.size else 0  # type: ignore[attr-defined]
    return bs.Kernel((name,), finish, n_rows=x.shape[0], point_fn=point)


def _criterion_kernels(g: pl.DataFrame, kind: str, k: int, pos: int | None, names: list[str]) -> list[bs.Kernel]:
    h = g["h_code"].to_numpy().astype(np.int64)
    j = g["j_code"].to_numpy().astype(np.int64)
    hv = g["h_value"].to_numpy().astype(float)
    jv = g["j_value"].to_numpy().astype(float)
    ordered = kind in ("ordinal", "binary") and not np.isnan(hv).any() and not np.isnan(jv).any()
    kernels: list[bs.Kernel] = []
    conf = [n for n in names if n in {"accuracy", "precision", "recall", "f1", "f1_macro", "mcc", "cohen_kappa",
                                      "kappa_linear", "kappa_quadratic", "gwet_ac1", "judge_rate", "human_rate",
                                      "js_divergence"}]  # fmt: skip
    if kind != "binary" or pos is None:
        conf = [n for n in conf if n not in _BINARY_ONLY]
    if kind == "nominal":
        conf = [n for n in conf if n not in _ORDERED_ONLY]
    if conf:
        kernels.append(_confusion_kernel(h, j, k, pos, conf))
    if ordered and "mae" in names:
        st = error_stats(hv, jv)
        kernels.append(bs.Kernel(("mae",), lambda t: {"mae": errors_from_stats(t)["mae"]}, stats=st))
    if ordered and "spearman" in names:
        kernels.append(bs.Kernel(("spearman",), lambda w: {"spearman": spearman_weighted(hv, jv, w)}, n_rows=h.size))
    if ordered and "kendall" in names:
        kernels.append(_kendall_kernel(hv, jv))
    return kernels


def _score_kernels(hs: np.ndarray, js: np.ndarray, names: list[str]) -> list[bs.Kernel]:
    kernels: list[bs.Kernel] = []
    err = [n for n in names if n in ("rmse", "mae", "bias", "effect_size")]
    if err:
        st = error_stats(hs, js)
        kernels.append(bs.Kernel(tuple(err), lambda t: {n: errors_from_stats(t)[n] for n in err}, stats=st))
    if "pearson" in names:
        kernels.append(bs.Kernel(("pearson",), lambda w: {"pearson": pearson_weighted(hs, js, w)}, n_rows=hs.size))
    if "spearman" in names:
        kernels.append(bs.Kernel(("spearman",), lambda w: {"spearman": spearman_weighted(hs, js, w)}, n_rows=hs.size))
    if "kendall" in names:
        kernels.append(_kendall_kernel(hs, js))
    if "rmse_affine" in names:
        kernels.append(bs.Kernel(("rmse_affine",), lambda w: {"rmse_affine": rmse_affine_weighted(hs, js, w)}, n_rows=hs.size))
    dist = [n for n in names if n in ("wasserstein", "ks")]
    if dist:

        def finish(w: np.ndarray) -> dict[str, np.ndarray]:
            w1, ks = cdf_distances_weighted(js, hs, w, w)
            return {"wasserstein": w1, "ks": ks}

        kernels.append(bs.Kernel(tuple(dist), finish, n_rows=hs.size))
    return kernels


def _pvalues(names: list[str], h: np.ndarray, j: np.ndarray, *, labels: list[int] | None = None) -> dict[str, float]:
    from rubrictools import metrics as m

    out: dict[str, float] = {}
    if len(h) < 2:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            if name == "cohen_kappa" and labels is not None:
                k = len(labels)
                cm = np.bincount(h.astype(np.int64) * k + j.astype(np.int64), minlength=k * k).reshape(k, k).astype(float)
                out[name] = kappa_test_from_confusion(cm).pvalue
            elif name == "pearson":
                out[name] = m.pearson(h, j).pvalue
            elif name == "spearman":
                out[name] = m.spearman(h, j).pvalue
            elif name == "kendall":
                out[name] = m.kendall(h, j).pvalue
            elif name == "bias":
                out[name] = m.mean_bias(h, j).pvalue
            elif name == "ks":
                out[name] = m.ks_2samp(j, h).pvalue
    return out


# =============================================================================== resampling plan
@dataclass
class _Plan:
    index: pl.DataFrame  # id -> __cluster
    weights: np.ndarray | None
    method: Method
    ci: float


def _plan(ids: pl.Series, n_boot: int, seed: Any, stratify: Any, method: Method, ci: float, human: Any) -> _Plan:
    index = pl.DataFrame({"id": ids.unique(maintain_order=True)}).with_row_index("__cluster")
    index = index.with_columns(pl.col("__cluster").cast(pl.Int64))
    if not n_boot:
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
    weights = bs.cluster_weights(index.height, n_boot, seed=seed, strata=strata)
    return _Plan(index, weights, method, ci)


def _evaluate(kernels: list[bs.Kernel], clusters: np.ndarray, plan: _Plan) -> dict[str, bs.Interval]:
    out: dict[str, bs.Interval] = {}
    for kern in kernels:
        weights = plan.weights
        distinct = getattr(kern.finish, "distinct_pairs", 0)
        if weights is not None and distinct > _KENDALL_MAX_ROWS:
            warnings.warn(
                f"kendall: no bootstrap interval for {distinct} distinct (x, y) pairs (costs O(B n^2)); point estimate only",
                stacklevel=3,
            )
            weights = None
        out.update(bs.bootstrap(kern, clusters, weights, ci=plan.ci, method=plan.method))
    return out


def _rows(
    group: dict[str, Any], names: list[str], res: dict[str, bs.Interval], pvals: dict[str, float],
    n: int, n_items: int, n_excluded: int, kind: str, boot: bool,
) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for name in names:
        if name not in res:
            continue
        iv = res[name]
        rows.append(
            {
                **group,
                "metric": name,
                "value": _f(iv.value),
                "ci_low": _f(iv.low),
                "ci_high": _f(iv.high),
                "p_value": _f(pvals.get(name, float("nan"))),
                "n": n,
                "n_items": n_items,
                "n_excluded": n_excluded,
                "n_degenerate": iv.n_degenerate if boot and iv.n_boot else None,
                "kind": kind,
            }
        )
    return rows


def _f(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _out_frame(rows: list[dict[str, Any]], by: list[str], group_dtypes: dict[str, pl.DataType]) -> pl.DataFrame:
    schema: dict[str, Any] = {c: group_dtypes.get(c, pl.String) for c in by}
    schema.update(
        metric=pl.String, value=pl.Float64, ci_low=pl.Float64, ci_high=pl.Float64, p_value=pl.Float64,
        n=pl.Int64, n_items=pl.Int64, n_excluded=pl.Int64, n_degenerate=pl.Int64, kind=pl.String,
    )  # fmt: skip
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def _check_metrics(metrics: Sequence[str] | None, allowed: Sequence[str], what: str) -> list[str] | None:
    if metrics is None:
        return None
    if isinstance(metrics, str):
        metrics = [metrics]
    bad = [m for m in metrics if m not in allowed]
    if bad:
        raise ValueError(f"unknown {what} metric(s) {bad}; choose from {list(allowed)}")
    return list(metrics)


# =============================================================================== score level
def _human_scores(human: pl.DataFrame, rubric: Rubric | None) -> pl.DataFrame:
    """Rubric score of each (submission, rater) from the human labels: ``id, rater, score``."""
    from rubrictools.scoring import score

    if rubric is None:
        raise ValueError("score-level agreement needs the rubric to score the human labels")
    h = _human_frame(human)
    if h["rater"].n_unique() <= 1:
        rater = h["rater"][0] if h.height else "human"
        hv = h.select("id", "criterion", pl.col("label").cast(pl.String).alias("verdict"))
        return score(hv, rubric).select("id", pl.lit(rater).alias("rater"), "score")
    # several raters: score each (id, rater) as its own submission under a synthetic integer id
    raters = h.select(pl.col("rater").unique(maintain_order=True)).with_row_index("__r")
    h = h.join(raters, on="rater").with_columns(
        (pl.col("id").rank("dense").cast(pl.Int64) * (raters.height + 1) + pl.col("__r").cast(pl.Int64)).alias("__sid")
    )
    hv = h.select(pl.col("__sid").alias("id"), "criterion", pl.col("label").cast(pl.String).alias("verdict"))
    sc = score(hv, rubric).select(pl.col("id").alias("__sid"), "score")
    return h.select("id", "rater", "__sid").unique("__sid").join(sc, on="__sid").drop("__sid")


def _score_pairs(
    verdicts: Any, human: Any, rubric: Rubric | None, by: list[str], raters: Raters, human_scores: Any
) -> pl.DataFrame:
    """``by..., id, rater, h_value, j_value`` with rubric scores of the judge and the humans."""
    from rubrictools.scoring import score

    v = to_polars(verdicts, name="verdicts")
    if "score" in v.columns and "criterion" not in v.columns:
        judge_scores = v.select(
            "id", *[c for c in by if c in v.columns], *(["rater"] if "rater" in v.columns else []), pl.col("score").alias("j_value")
        )
        if "rater" in judge_scores.columns:  # per-rater predictions (e.g. a calibrator's): pair with that rater
            judge_scores = judge_scores.with_columns(pl.col("rater").cast(pl.String))
    else:
        if rubric is None:
            raise ValueError("score-level agreement needs the rubric (or score tables with a 'score' column)")
        v = _verdict_frame(v, by)
        parts = []
        if "judge" in by:
            for (judge,), sub in v.group_by(["judge"], maintain_order=True):
                s = score(sub, rubric)
                parts.append(s.select("id", pl.lit(judge).alias("judge"), pl.col("score").alias("j_value")))
            judge_scores = pl.concat(parts)
        else:
            judge_scores = score(v, rubric).select("id", pl.col("score").alias("j_value"))
    if human_scores is not None:
        hs = to_polars(human_scores, name="human_scores")
    else:
        h = to_polars(human, name="human")
        hs = h if "score" in h.columns and "criterion" not in h.columns else _human_scores(h, rubric)
    if "rater" not in hs.columns:
        hs = hs.with_columns(pl.lit("human").alias("rater"))
    hs = hs.select("id", pl.col("rater").cast(pl.String), pl.col("score").cast(pl.Float64).alias("h_value"))
    if raters == "consensus":
        hs = hs.group_by("id", maintain_order=True).agg(pl.col("h_value").mean(), pl.lit("consensus").alias("rater"))
    on = ["id", "rater"] if "rater" in judge_scores.columns and raters == "each" else ["id"]
    if on == ["id"] and "rater" in judge_scores.columns:
        judge_scores = judge_scores.group_by("id", maintain_order=True).agg(pl.col("j_value").mean())
    out = hs.join(judge_scores, on=on, how="left")
    return out


# =============================================================================== public API
def agreement(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    by: str | Sequence[str] | None = "criterion",
    level: Level | None = None,
    metrics: Sequence[str] | None = None,
    raters: Raters = "each",
    na: NaMode = "exclude",
    human_scores: Any = None,
    bootstrap: int = 1000,
    ci: float = 0.95,
    method: Method = "percentile",
    seed: int | None = None,
    stratify: Any = None,
) -> pl.DataFrame:
    """Agreement of the judge with human labels, per criterion and on the rubric score.

    Parameters
    ----------
    verdicts
        A verdict table (``id, criterion, verdict``; ``error`` rows are excluded and
        counted), or a score table (``id, score``) for score-level agreement only.
    human
        Human labels ``id, criterion, label[, rater]`` (or a score table ``id, score[, rater]``).
    rubric
        Orders ordinal options, fixes the label set, and scores both sides for the
        score-level rows. Without it, labels are inferred as binary, numeric or nominal.
    by
        Grouping of the criterion-level rows: ``"criterion"`` (default), ``None`` (pool all
        criteria; they must share one label set), or a list such as ``["judge", "criterion"]``.
    level
        ``"criterion"``, ``"score"`` or ``"both"`` (default: both when a rubric is given).
    metrics
        Subset of :data:`CRITERION_METRICS` and :data:`SCORE_METRICS`; default by kind:
        binary -> accuracy, precision, recall, f1, mcc, cohen_kappa, gwet_ac1, judge_rate and
        human_rate (MET rates; ``MET`` is the positive class); ordinal -> accuracy,
        cohen_kappa, kappa_linear, kappa_quadratic, spearman, kendall, mae, js_divergence (of
        the two label distributions); nominal -> accuracy, f1_macro, cohen_kappa, gwet_ac1,
        js_divergence; score -> all of :data:`SCORE_METRICS` but ``rmse_affine`` (the RMSE
        floor left after the best affine rescaling of the judge's scores; ask for it by name).
    raters
        ``"each"``: every human rating is paired with the judge (clusters keep a submission's
        raters together); ``"consensus"``: the majority label (median for ordinal, mean
        score), ties excluded.
    na
        CANNOT_ASSESS / NA labels: ``"exclude"`` (default, counted in ``n_excluded``),
        ``"as_category"`` (an extra class) or ``"as_worst"`` (the score-minimising option).
    bootstrap, ci, method, seed, stratify
        Number of cluster-bootstrap resamples (0: point estimates only), interval level,
        ``"percentile"`` or ``"bca"``, seed, and optional strata (a human-label column name,
        or a DataFrame ``id, stratum``) to resample within.

    Returns
    -------
    polars.DataFrame
        One row per group and metric: ``<by...>, metric, value, ci_low, ci_high, p_value,
        n`` (pairs), ``n_items`` (submissions), ``n_excluded``, ``n_degenerate`` (resamples
        where the metric was undefined), ``kind``. Score-level rows have criterion
        ``"__score__"`` (:data:`SCORE`).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> v = pl.DataFrame({"id": [1, 2, 3, 4], "criterion": "a", "verdict": ["MET", "MET", "UNMET", "UNMET"]})
    >>> h = pl.DataFrame({"id": [1, 2, 3, 4], "criterion": "a", "label": ["MET", "UNMET", "UNMET", "UNMET"]})
    >>> t = rt.agreement(v, h, bootstrap=0)
    >>> t.filter(pl.col("metric") == "accuracy").select("criterion", "value", "n").row(0)
    ('a', 0.75, 4)
    """
    if na not in ("exclude", "as_category", "as_worst"):
        raise ValueError("na must be 'exclude', 'as_category' or 'as_worst'")
    if raters not in ("each", "consensus"):
        raise ValueError("raters must be 'each' or 'consensus'")
    if bootstrap < 0:
        raise ValueError("bootstrap must be >= 0")
    by_list = [] if by is None else ([by] if isinstance(by, str) else list(by))
    vf = to_polars(verdicts, name="verdicts")
    score_only = "score" in vf.columns and "criterion" not in vf.columns
    if level is None:
        level = "score" if score_only else ("both" if rubric is not None or human_scores is not None else "criterion")
    if level not in ("criterion", "score", "both"):
        raise ValueError("level must be 'criterion', 'score' or 'both'")
    chosen = _check_metrics(metrics, (*CRITERION_METRICS, *SCORE_METRICS), "agreement")

    pairs = None
    if level in ("criterion", "both"):
        if score_only:
            raise ValueError("criterion-level agreement needs a verdict table, not a score table")
        pairs = _criterion_pairs(vf, human, rubric, by_list, na, raters)
    score_by = [c for c in by_list if c not in ("criterion",)]
    spairs = None
    if level in ("score", "both"):
        if [c for c in score_by if c != "judge"]:
            raise ValueError("score-level agreement can be grouped by 'judge' only")
        spairs = _score_pairs(vf, human, rubric, score_by, raters, human_scores)

    id_parts = []
    if pairs is not None:
        id_parts.append(pairs.frame.select("id"))
    if spairs is not None:
        id_parts.append(spairs.select("id"))
    ids = pl.concat(id_parts)["id"] if id_parts else pl.Series("id", [])
    plan = _plan(ids, bootstrap, seed, stratify, method, ci, human)
    rows: list[dict[str, Any]] = []
    dtypes: dict[str, pl.DataType] = {}

    if pairs is not None:
        frame = pairs.frame.join(plan.index, on="id", how="left")
        dtypes = {c: frame.schema[c] for c in by_list if c in frame.columns}
        excl = {tuple(r[:-1]): r[-1] for r in pairs.excluded.iter_rows()} if by_list else {(): int(pairs.excluded["n_excluded"].sum())}
        groups = frame.partition_by(by_list, as_dict=True, maintain_order=True) if by_list else {(): frame}
        seen = set()
        for key, g in groups.items():
            key = key if isinstance(key, tuple) else (key,)
            seen.add(key)
            kinds = g["kind"].unique().to_list()
            if len(kinds) != 1 or g["n_classes"].n_unique() != 1:
                raise ValueError(f"group {dict(zip(by_list, key))} mixes criteria with different label sets; group by criterion")
            kind, k = kinds[0], int(g["n_classes"][0])
            pos = g["pos_code"][0]
            if by_list == [] and g["criterion"].n_unique() > 1 and g["classes"].n_unique() > 1:
                raise ValueError("by=None pools criteria, which must share one label set")
            names = chosen if chosen is not None else list(DEFAULT_METRICS[kind])
            names = [n for n in names if n in CRITERION_METRICS]
            kernels = _criterion_kernels(g, kind, k, pos, names)
            res = _evaluate(kernels, g["__cluster"].to_numpy(), plan)
            # p-values only for the metrics that were computed (e.g. no rank tests on nominal labels)
            pv = _pvalues([n for n in names if n in _PVALUE and n in res], g["h_code"].to_numpy(), g["j_code"].to_numpy(),
                          labels=list(range(k)))  # fmt: skip
            group = dict(zip(by_list, key))
            rows += _rows(group, names, res, pv, g.height, g["id"].n_unique(), int(excl.get(key, 0)), kind, plan.weights is not None)
        for key, n_ex in excl.items():  # groups with no usable pair at all
            if key not in seen and n_ex:
                rows += _rows(dict(zip(by_list, key)), ["accuracy"], {"accuracy": bs.Interval(float("nan"))}, {}, 0, 0, int(n_ex), "", False)

    if spairs is not None:
        sframe = spairs.join(plan.index, on="id", how="left")
        usable = sframe.filter(pl.col("h_value").is_not_null() & pl.col("j_value").is_not_null())
        names = [n for n in chosen if n in SCORE_METRICS] if chosen else [n for n in SCORE_METRICS if n not in _OPT_IN]
        sgroups = usable.partition_by(score_by, as_dict=True, maintain_order=True) if score_by else {(): usable}
        for key, g in sgroups.items():
            key = key if isinstance(key, tuple) else (key,)
            hs, js = g["h_value"].to_numpy(), g["j_value"].to_numpy()
            res = _evaluate(_score_kernels(hs, js, names), g["__cluster"].to_numpy(), plan)
            pv = _pvalues([n for n in names if n in _PVALUE], hs, js)
            group = dict(zip(score_by, key))
            if "criterion" in by_list:
                group["criterion"] = SCORE
            n_ex = sframe.height - usable.height if not score_by else sframe.filter(
                pl.all_horizontal([pl.col(c) == v for c, v in zip(score_by, key)])
            ).height - g.height
            rows += _rows(group, names, res, pv, g.height, g["id"].n_unique(), n_ex, "score", plan.weights is not None)
    out_by = by_list if (pairs is not None or "criterion" in by_list) else score_by
    return _out_frame(rows, out_by, dtypes)


def inter_rater(
    human: Any,
    rubric: Rubric | None = None,
    *,
    by: str | Sequence[str] | None = "criterion",
    metrics: Sequence[str] | None = None,
    bootstrap: int = 1000,
    ci: float = 0.95,
    method: Method = "percentile",
    seed: int | None = None,
    stratify: Any = None,
) -> pl.DataFrame:
    """Agreement among human raters (the ceiling for a judge), per criterion.

    ``human`` is the long label table ``id, criterion, label, rater``. Metrics (default:
    all that apply): ``fleiss_kappa``, ``gwet_ac1``, ``percent_agreement`` (Gwet's forms,
    which allow a varying number of raters per submission), ``krippendorff_alpha`` (nominal
    for binary/nominal criteria, ordinal for ordinal ones; missing ratings allowed),
    ``cohen_kappa_pairwise`` (mean Cohen's kappa over rater pairs, each on the submissions
    both rated) and, for ordinal criteria, ``icc2`` / ``icc3`` (ICC(2,1), ICC(3,1) on the
    submissions every rater rated). NA/CANNOT_ASSESS labels are treated as missing.
    Output shape as in :func:`agreement`; ``n`` counts ratings, ``n_items`` submissions
    rated at least twice.

    >>> import polars as pl, rubrictools as rt
    >>> h = pl.DataFrame({"id": [1, 1, 2, 2, 3, 3], "criterion": "a", "rater": ["x", "y"] * 3,
    ...                   "label": ["MET", "MET", "UNMET", "UNMET", "MET", "UNMET"]})
    >>> t = rt.inter_rater(h, bootstrap=0)
    >>> round(t.filter(pl.col("metric") == "percent_agreement")["value"].item(), 4)
    0.6667
    """
    chosen = _check_metrics(metrics, INTER_RATER_METRICS, "inter-rater")
    by_list = [] if by is None else ([by] if isinstance(by, str) else list(by))
    h = _with_key(_human_frame(human), "label", "h_key")
    keys = h.select("criterion", pl.col("h_key").alias("key")).unique()
    labels = _label_table(rubric, keys, "exclude")
    h = h.join(
        labels.select("criterion", pl.col("key").alias("h_key"), pl.col("code").alias("h_code"), pl.col("value").alias("h_value")),
        on=["criterion", "h_key"],
        how="left",
    ).join(labels.group_by("criterion").agg(pl.col("kind", "n_classes").first()), on="criterion", how="left")
    if rubric is not None:
        bad = h.filter(pl.col("h_key").is_not_null() & pl.col("kind").is_null())
        if bad.height:
            raise ValueError(f"human labels: criterion {bad['criterion'][0]!r} is not in the rubric")
    n_missing = h.group_by(by_list or pl.lit(0).alias("__all")).agg(pl.col("h_code").is_null().sum().alias("n_excluded"))
    rated = h.filter(pl.col("h_code").is_not_null())
    plan = _plan(rated["id"], bootstrap, seed, stratify, method, ci, human)
    rated = rated.join(plan.index, on="id", how="left")
    groups = rated.partition_by(by_list, as_dict=True, maintain_order=True) if by_list else {(): rated}
    excl = {tuple(r[:-1]): r[-1] for r in n_missing.iter_rows()}
    rows: list[dict[str, Any]] = []
    dtypes = {c: rated.schema[c] for c in by_list}
    for key, g in groups.items():
        key = key if isinstance(key, tuple) else (key,)
        if g["kind"].n_unique() != 1 or g["n_classes"].n_unique() != 1:
            raise ValueError("inter_rater: a group mixes criteria with different label sets; group by criterion")
        kind, k = g["kind"][0], int(g["n_classes"][0])
        names = chosen or [n for n in INTER_RATER_METRICS if kind == "ordinal" or n not in _ORDERED_ONLY]
        if kind != "ordinal":
            names = [n for n in names if n not in _ORDERED_ONLY]
        units = g.select("id", "__cluster").unique("id", maintain_order=True).with_row_index("__u")
        g = g.join(units.select("id", "__u"), on="id")
        u = g["__u"].to_numpy().astype(np.int64)
        n_units = units.height
        rmap = {r: i for i, r in enumerate(g["rater"].unique(maintain_order=True).to_list())}
        ri = g["rater"].replace_strict(rmap, return_dtype=pl.Int64).to_numpy()
        n_r = len(rmap)
        codes = np.full((n_units, n_r), -1, dtype=np.int64)
        codes[u, ri] = g["h_code"].to_numpy()
        vals = np.full((n_units, n_r), np.nan)
        vals[u, ri] = g["h_value"].to_numpy()
        counts = np.zeros((n_units, k))
        np.add.at(counts, (u, g["h_code"].to_numpy()), 1.0)
        kernels: list[bs.Kernel] = []
        gw = [n for n in names if n in ("fleiss_kappa", "gwet_ac1", "percent_agreement")]
        if gw:
            st = unit_agreement_stats(counts)
            kind_of = {"fleiss_kappa": "fleiss", "gwet_ac1": "ac1", "percent_agreement": "pa"}
            kernels.append(bs.Kernel(tuple(gw), lambda t, gw=gw: {n: chance_corrected_from_unit_stats(t, kind_of[n]) for n in gw}, stats=st))  # type: ignore[misc]
        if "krippendorff_alpha" in names:
            lvl = "ordinal" if kind == "ordinal" else "nominal"
            st = alpha_unit_stats(counts)
            dom = np.arange(k, dtype=float)
            kernels.append(bs.Kernel(("krippendorff_alpha",), lambda t, lvl=lvl, dom=dom: {"krippendorff_alpha": alpha_from_stats(t, dom, lvl)}, stats=st))  # type: ignore[misc]
        if "cohen_kappa_pairwise" in names and n_r >= 2:
            pairs = [(a, b) for a in range(n_r) for b in range(a + 1, n_r)]
            st = np.zeros((n_units, len(pairs) * k * k))
            for p, (a, b) in enumerate(pairs):
                both = (codes[:, a] >= 0) & (codes[:, b] >= 0)
                idx = np.flatnonzero(both)
                st[idx, p * k * k + codes[idx, a] * k + codes[idx, b]] = 1.0

            def pw(t: np.ndarray, n_pairs: int = len(pairs)) -> dict[str, np.ndarray]:
                kap = kappa_from_confusion(t.reshape(t.shape[0], n_pairs, k, k))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    return {"cohen_kappa_pairwise": np.nanmean(kap, axis=-1)}

            kernels.append(bs.Kernel(("cohen_kappa_pairwise",), pw, stats=st))
        icc_names = [n for n in names if n in ("icc2", "icc3")]
        if icc_names and n_r >= 2:
            complete = ~np.isnan(vals).any(1)
            st = icc_unit_stats(np.where(complete[:, None], vals, 0.0)) * complete[:, None]
            kernels.append(bs.Kernel(tuple(icc_names), lambda t, icc_names=icc_names: {n: icc_from_stats(t)["ICC" + n[-1]] for n in icc_names}, stats=st))  # type: ignore[misc]
        clusters = units["__cluster"].to_numpy()
        res = _evaluate(kernels, clusters, plan) if n_r >= 2 else {}
        for n in names:
            res.setdefault(n, bs.Interval(float("nan")))
        n_items = int(((codes >= 0).sum(1) >= 2).sum())
        rows += _rows(dict(zip(by_list, key)), names, res, {}, g.height, n_items, int(excl.get(key if by_list else (0,), 0)), kind, plan.weights is not None)
    return _out_frame(rows, by_list, dtypes)


def compare(
    verdicts_a: Any,
    verdicts_b: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    metric: str = "cohen_kappa",
    by: str | Sequence[str] | None = "criterion",
    names: tuple[str, str] = ("a", "b"),
    na: NaMode = "exclude",
    raters: Raters = "each",
    bootstrap: int = 2000,
    ci: float = 0.95,
    seed: int | None = None,
    stratify: Any = None,
) -> pl.DataFrame:
    """Paired bootstrap of the difference in one metric between two judges on the same items.

    Both verdict tables are paired with the same human labels, restricted to the pairs
    usable on both sides, and resampled with the *same* draws, so the interval of
    ``diff = value_a - value_b`` accounts for the correlation between the judges. The
    ``p_value`` (two-sided, H0: no difference) is the share of resampled differences at
    least as far from the observed one as the observed one is from 0:
    ``(1 + #{|d* - d| >= |d|}) / (B + 1)``. ``metric`` may be a criterion-level metric or,
    with ``metric`` in :data:`SCORE_METRICS` and a rubric, a score-level one.

    >>> import polars as pl, rubrictools as rt
    >>> h = pl.DataFrame({"id": range(6), "criterion": "a", "label": ["MET", "UNMET"] * 3})
    >>> a = h.rename({"label": "verdict"})
    >>> b = a.with_columns(pl.lit("MET").alias("verdict"))
    >>> rt.compare(a, b, h, metric="accuracy", bootstrap=200, seed=0)["diff"].item()
    0.5
    """
    by_list = [] if by is None else ([by] if isinstance(by, str) else list(by))
    score_level = metric in SCORE_METRICS and metric not in CRITERION_METRICS
    if metric not in CRITERION_METRICS and metric not in SCORE_METRICS:
        raise ValueError(f"unknown metric {metric!r}")
    key_cols: list[str]
    if score_level:
        pa = _score_pairs(verdicts_a, human, rubric, [], raters, None)
        pb = _score_pairs(verdicts_b, human, rubric, [], raters, None)
        key_cols = ["id", "rater"]
        pa = pa.filter(pl.col("h_value").is_not_null() & pl.col("j_value").is_not_null())
        pb = pb.filter(pl.col("h_value").is_not_null() & pl.col("j_value").is_not_null())
        group_cols: list[str] = []
    else:
        pa = _criterion_pairs(verdicts_a, human, rubric, by_list, na, raters).frame
        pb = _criterion_pairs(verdicts_b, human, rubric, by_list, na, raters).frame
        key_cols = list(dict.fromkeys(["id", "criterion", "rater", *by_list]))
        group_cols = by_list
    common = pa.select(key_cols).join(pb.select(key_cols), on=key_cols, how="inner")
    pa = common.join(pa, on=key_cols, how="left", maintain_order="left")
    pb = common.join(pb, on=key_cols, how="left", maintain_order="left")
    plan = _plan(common["id"], bootstrap, seed, stratify, "percentile", ci, human)
    pa = pa.join(plan.index, on="id", how="left", maintain_order="left")
    pb = pb.join(plan.index, on="id", how="left", maintain_order="left")
    ga = pa.partition_by(group_cols, as_dict=True, maintain_order=True) if group_cols else {(): pa}
    gb = pb.partition_by(group_cols, as_dict=True, maintain_order=True) if group_cols else {(): pb}
    rows = []
    for key, a in ga.items():
        b = gb[key]
        key = key if isinstance(key, tuple) else (key,)
        if score_level:
            ka = _score_kernels(a["h_value"].to_numpy(), a["j_value"].to_numpy(), [metric])
            kb = _score_kernels(b["h_value"].to_numpy(), b["j_value"].to_numpy(), [metric])
        else:
            kind, k, pos = a["kind"][0], int(a["n_classes"][0]), a["pos_code"][0]
            ka = _criterion_kernels(a, kind, k, pos, [metric])
            kb = _criterion_kernels(b, kind, k, pos, [metric])
        if not ka or not kb:
            raise ValueError(f"metric {metric!r} does not apply to group {dict(zip(group_cols, key))}")
        clusters = a["__cluster"].to_numpy()
        va, vb = ka[0].point()[metric], kb[0].point()[metric]
        diff = va - vb
        low = high = p = float("nan")
        n_deg = None
        if plan.weights is not None:
            da = bs.evaluate(ka[0], clusters, plan.weights)[metric]
            db = bs.evaluate(kb[0], clusters, plan.weights)[metric]
            d = da - db
            iv = bs.interval(diff, d, ci=ci)
            low, high, n_deg = iv.low, iv.high, iv.n_degenerate
            ok = np.isfinite(d)
            if ok.any() and np.isfinite(diff):
                p = float((1 + np.sum(np.abs(d[ok] - diff) >= abs(diff) - 1e-12)) / (ok.sum() + 1))
        group = dict(zip(group_cols, key))
        if score_level and "criterion" in by_list:
            group["criterion"] = SCORE
        rows.append({**group, "metric": metric, f"value_{names[0]}": _f(va), f"value_{names[1]}": _f(vb),
                     "diff": _f(diff), "ci_low": _f(low), "ci_high": _f(high), "p_value": _f(p),
                     "n": a.height, "n_items": a["id"].n_unique(), "n_degenerate": n_deg})  # fmt: skip
    schema: dict[str, Any] = {c: pl.String for c in (group_cols or (["criterion"] if score_level and "criterion" in by_list else []))}
    schema.update({"metric": pl.String, f"value_{names[0]}": pl.Float64, f"value_{names[1]}": pl.Float64,
                   "diff": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "p_value": pl.Float64,
                   "n": pl.Int64, "n_items": pl.Int64, "n_degenerate": pl.Int64})  # fmt: skip
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)

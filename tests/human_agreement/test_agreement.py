"""agreement / inter_rater / compare: joins, label handling, exclusions, intervals."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from rubrictools import metrics as m
from rubrictools.human_agreement import SCORE

RUBRIC = rt.Rubric.from_dict(
    [
        {"name": "correct", "weight": 10, "requirement": "States the right answer"},
        {
            "name": "clarity",
            "weight": 5,
            "requirement": "Is clear",
            "options": [
                {"label": "great", "value": 1.0},
                {"label": "poor", "value": 0.0},
                {"label": "ok", "value": 0.5},
                {"label": "n/a", "value": 0.0, "na": True},
            ],
        },
        {"name": "error", "weight": -5, "requirement": "Contains a factual error"},
    ]
)


def _data(n: int = 120, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    v, h = [], []
    labs = ["poor", "ok", "great"]
    for i in range(n):
        for c, p in (("correct", 0.6), ("error", 0.25)):
            t = rng.random() < p
            j = t if rng.random() < 0.85 else not t
            v.append((f"s{i}", c, "MET" if j else "UNMET", None))
            for r in ("ann", "bob"):
                hh = t if rng.random() < 0.9 else not t
                h.append((f"s{i}", c, r, "met" if hh else "Unmet"))
        q = int(rng.integers(0, 3))
        v.append((f"s{i}", "clarity", labs[int(np.clip(q + rng.integers(-1, 2), 0, 2))], None))
        for r in ("ann", "bob"):
            h.append((f"s{i}", "clarity", r, labs[q] if rng.random() < 0.85 else "N/A"))
    verdicts = pl.DataFrame(v, schema=["id", "criterion", "verdict", "error"], orient="row")
    human = pl.DataFrame(h, schema=["id", "criterion", "rater", "label"], orient="row")
    return verdicts, human


def _pairs(verdicts: pl.DataFrame, human: pl.DataFrame, criterion: str) -> pl.DataFrame:
    return (
        human.filter(pl.col("criterion") == criterion)
        .join(verdicts, on=["id", "criterion"])
        .filter(pl.col("error").is_null() & (pl.col("label").str.to_lowercase() != "n/a"))
    )


def test_agreement_values_equal_metric_functions() -> None:
    v, h = _data()
    out = rt.agreement(v, h, RUBRIC, n_resamples=0)
    get = lambda c, k: out.filter((pl.col("criterion") == c) & (pl.col("metric") == k))["value"].item()  # noqa: E731
    p = _pairs(v, h, "correct")
    hl, jl = p["label"].str.to_uppercase(), p["verdict"]
    assert get("correct", "accuracy") == pytest.approx(m.accuracy(hl, jl))
    assert get("correct", "cohen_kappa") == pytest.approx(m.cohen_kappa(hl, jl))
    assert get("correct", "f1") == pytest.approx(m.f1(hl, jl, pos_label="MET"))
    assert get("correct", "mcc") == pytest.approx(m.mcc(hl, jl))
    assert get("correct", "gwet_ac1") == pytest.approx(m.gwet_ac1(hl, jl, labels=["MET", "UNMET"]))
    # ordinal criterion: order comes from option values (poor < ok < great), not from the listing
    p = _pairs(v, h, "clarity")
    order = {"poor": 0, "ok": 1, "great": 2}
    hc = p["label"].replace_strict(order).to_numpy()
    jc = p["verdict"].replace_strict(order).to_numpy()
    assert get("clarity", "kappa_quadratic") == pytest.approx(
        m.cohen_kappa(hc, jc, labels=[0, 1, 2], weights="quadratic")
    )
    assert get("clarity", "spearman") == pytest.approx(m.spearman(hc, jc))
    assert get("clarity", "kendall") == pytest.approx(m.kendall(hc, jc))
    assert get("clarity", "js_divergence") == pytest.approx(m.js_divergence(hc, jc, labels=[0, 1, 2]))
    pc = _pairs(v, h, "correct")
    assert get("correct", "judge_rate") == pytest.approx((pc["verdict"] == "MET").mean())
    assert get("correct", "human_rate") == pytest.approx((pc["label"] == "met").mean())
    row = out.filter((pl.col("criterion") == "clarity") & (pl.col("metric") == "accuracy")).row(0, named=True)
    assert row["n"] == p.height
    assert row["n_excluded"] == h.filter(pl.col("label") == "N/A").height
    assert row["n_items"] == p["id"].n_unique()


def test_score_level_rows_compare_rubric_scores() -> None:
    v, h = _data()
    out = rt.agreement(v, h, RUBRIC, n_resamples=0, level="score")
    assert set(out["criterion"]) == {SCORE}
    js = rt.score(v, RUBRIC).rename({"score": "j"})
    hs = []
    for r in ("ann", "bob"):
        hr = h.filter(pl.col("rater") == r).rename({"label": "verdict"}).drop("rater")
        hs.append(rt.score(hr, RUBRIC).select("id", pl.col("score").alias("h"), pl.lit(r).alias("rater")))
    joined = pl.concat(hs).join(js, on="id").drop_nulls(["h", "j"])
    got = dict(out.select("metric", "value").iter_rows())
    assert got["pearson"] == pytest.approx(m.pearson(joined["h"], joined["j"]))
    assert got["rmse"] == pytest.approx(m.rmse(joined["h"], joined["j"]))
    assert got["bias"] == pytest.approx(float(m.mean_bias(joined["h"], joined["j"])))
    assert got["wasserstein"] == pytest.approx(m.wasserstein(joined["j"], joined["h"]))
    # score tables can be passed directly
    direct = rt.agreement(js.rename({"j": "score"}), pl.concat(hs).rename({"h": "score"}), n_resamples=0)
    assert dict(direct.select("metric", "value").iter_rows())["pearson"] == pytest.approx(got["pearson"])


def test_intervals_are_reproducible_and_bracket_the_estimate() -> None:
    v, h = _data()
    a = rt.agreement(v, h, RUBRIC, n_resamples=300, seed=7)
    b = rt.agreement(v, h, RUBRIC, n_resamples=300, seed=7)
    assert a.equals(b)
    c = rt.agreement(v, h, RUBRIC, n_resamples=300, seed=8)
    assert not a.equals(c)
    ok = a.filter(pl.col("value").is_not_null())
    assert (ok["ci_low"] <= ok["value"] + 1e-12).all() and (ok["value"] <= ok["ci_high"] + 1e-12).all()
    bca = rt.agreement(v, h, RUBRIC, n_resamples=300, seed=7, method="bca")
    assert bca["ci_low"].null_count() == a["ci_low"].null_count()
    strat = rt.agreement(
        v,
        h.with_columns(pl.col("id").str.slice(1).cast(pl.Int64).mod(2).alias("half")),
        RUBRIC,
        n_resamples=100,
        seed=1,
        stratify="half",
    )
    assert strat.height == a.height


def test_errors_and_unlabelled_rows_are_excluded_and_counted() -> None:
    v, h = _data(40)
    v = v.with_columns(
        pl.when((pl.col("id") == "s0") & (pl.col("criterion") == "correct"))
        .then(pl.lit("timeout"))
        .otherwise(pl.col("error"))
        .alias("error")
    )
    out = rt.agreement(v, h, RUBRIC, n_resamples=0, level="criterion")
    row = out.filter((pl.col("criterion") == "correct") & (pl.col("metric") == "accuracy")).row(0, named=True)
    assert row["n_excluded"] == 2  # the errored verdict, paired with both raters
    assert row["n"] == 78
    # an error row never counts as a verdict, whatever it says
    assert row["value"] == pytest.approx(
        m.accuracy(*(_pairs(v, h, "correct").select(pl.col("label").str.to_uppercase(), "verdict").get_columns()))
    )


def test_na_modes() -> None:
    v, h = _data(60)
    ex = rt.agreement(v, h, RUBRIC, n_resamples=0, level="criterion", metrics=["accuracy"])
    cat = rt.agreement(
        v, h, RUBRIC, n_resamples=0, level="criterion", metrics=["accuracy"], cannot_assess="as_category"
    )
    worst = rt.agreement(v, h, RUBRIC, n_resamples=0, level="criterion", metrics=["accuracy"], cannot_assess="as_worst")
    n = lambda t: t.filter(pl.col("criterion") == "clarity")["n"].item()  # noqa: E731
    assert n(cat) == n(worst) == n(ex) + ex.filter(pl.col("criterion") == "clarity")["n_excluded"].item()
    acc = lambda t: t.filter(pl.col("criterion") == "clarity")["value"].item()  # noqa: E731
    assert acc(cat) < acc(ex)  # the judge never answers n/a, so NA pairs are disagreements
    assert acc(worst) != acc(cat)


def test_labels_without_rubric_numeric_and_binary() -> None:
    # HANNA-style 1-5 ratings, judge ratings as strings, humans as ints
    rng = np.random.default_rng(1)
    n = 50
    truth = rng.integers(1, 6, n)
    v = pl.DataFrame(
        {
            "id": range(n),
            "criterion": "coherence",
            "verdict": [str(int(x)) for x in np.clip(truth + rng.integers(-1, 2, n), 1, 5)],
        }
    )
    h = pl.DataFrame({"id": range(n), "criterion": "coherence", "label": truth})
    out = rt.agreement(v, h, n_resamples=0)
    assert out["kind"].unique().to_list() == ["ordinal"]
    got = dict(out.select("metric", "value").iter_rows())
    assert got["spearman"] == pytest.approx(m.spearman(truth, v["verdict"].cast(pl.Int64)))
    assert got["mae"] == pytest.approx(m.mae(truth, v["verdict"].cast(pl.Int64)))
    # pandas inputs work the same
    pd = pytest.importorskip("pandas")
    out_pd = rt.agreement(v.to_pandas(), h.to_pandas(), n_resamples=0)
    assert out_pd.equals(out)
    _ = pd


def test_inputs_that_cannot_be_compared_say_why() -> None:
    v, h = _data(10)
    # ids of different types: named, not a SchemaError from inside polars
    with pytest.raises(ValueError, match=r"ids cannot be matched.*cast"):
        rt.agreement(v, h.with_columns(pl.col("id").str.slice(1).cast(pl.Int64)), RUBRIC, n_resamples=0)
    # no id in common
    with pytest.raises(ValueError, match="no id of the human labels is in the verdict table"):
        rt.agreement(v, h.with_columns(pl.col("id").str.replace("^", "other-")), RUBRIC, n_resamples=0)
    # a null label is left out, with a warning naming a real row
    first = h.row(0, named=True)
    holed = h.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise(pl.col("label")).alias("label"))
    with pytest.warns(UserWarning, match=f"1 row\\(s\\) have no label.*id={first['id']!r}") as caught:
        t = rt.agreement(v, holed, RUBRIC, n_resamples=0)  # both levels: criterion and score
    assert t.height and t["kind"].n_unique() >= 1
    assert sum("have no label" in str(w.message) for w in caught) == 1  # said once, not once per level
    # repeats without a rater column: the fix is a rater column
    no_rater = h.filter(pl.col("rater") == "ann").drop("rater")
    with pytest.raises(ValueError, match="add a 'rater' column"):
        rt.agreement(v, pl.concat([no_rater, no_rater]), RUBRIC, n_resamples=0)
    # one rater cannot agree with anyone
    with pytest.raises(ValueError, match="at least two raters"):
        rt.inter_rater(h.with_columns(pl.lit("solo").alias("rater")).unique(["id", "criterion"]), RUBRIC, n_resamples=0)


def test_bad_input_gets_clear_errors() -> None:
    v, h = _data(10)
    with pytest.raises(ValueError, match="not allowed by the rubric"):
        rt.agreement(v, h.with_columns(pl.lit("maybe").alias("label")), RUBRIC, n_resamples=0)
    with pytest.raises(ValueError, match="not in the rubric"):
        rt.agreement(v.with_columns(pl.col("criterion").replace("error", "ghost")), h, RUBRIC, n_resamples=0)
    with pytest.raises(ValueError, match="missing"):
        rt.agreement(v, h.drop("label"), RUBRIC, n_resamples=0)
    with pytest.raises(ValueError, match=r"rows repeat an \(id, criterion, rater\).*drop or merge"):
        rt.agreement(v, pl.concat([h, h]), RUBRIC, n_resamples=0)
    with pytest.raises(ValueError, match="several rows"):
        rt.agreement(pl.concat([v, v]), h, RUBRIC, n_resamples=0)
    with pytest.raises(ValueError, match="unknown agreement metric"):
        rt.agreement(v, h, RUBRIC, metrics=["kappa"], n_resamples=0)
    two = pl.concat([v.with_columns(pl.lit("a").alias("judge")), v.with_columns(pl.lit("b").alias("judge"))])
    with pytest.raises(ValueError, match="several judges"):
        rt.agreement(two, h, RUBRIC, n_resamples=0)
    per_judge = rt.agreement(two, h, RUBRIC, by=["judge", "criterion"], n_resamples=0, level="criterion")
    assert set(per_judge["judge"]) == {"a", "b"}


def test_several_judges_on_disjoint_submissions_are_pooled_with_a_warning() -> None:
    v, h = _data(10)
    split = v.with_columns(pl.when(pl.col("id") < "s5").then(pl.lit("a")).otherwise(pl.lit("b")).alias("judge"))
    with pytest.warns(UserWarning, match=r"several judges graded one criterion.*\['a', 'b'\].*by=\['judge'"):
        pooled = rt.agreement(split, h, RUBRIC, n_resamples=0, level="criterion")
    assert pooled.equals(rt.agreement(v, h, RUBRIC, n_resamples=0, level="criterion"))  # pooled, not dropped
    rules = v.filter(pl.col("criterion") == v["criterion"][0]).with_columns(pl.lit("rule").alias("judge"))
    model = v.filter(pl.col("criterion") != v["criterion"][0]).with_columns(pl.lit("model").alias("judge"))
    split_by_criterion = pl.concat([model, rules])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one judge per criterion (e.g. rule rows beside a model's): no warning
        rt.agreement(split_by_criterion, h, RUBRIC, n_resamples=0, level="criterion")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")  # criterion and score levels both read the verdicts: said once
        rt.agreement(split, h, RUBRIC, n_resamples=0, level="both")
    assert sum("several judges graded" in str(w.message) for w in said) == 1


def test_consensus_and_degenerate_groups() -> None:
    h = pl.DataFrame(
        {
            "id": [1, 1, 1, 2, 2, 3, 3],
            "criterion": "a",
            "rater": ["x", "y", "z", "x", "y", "x", "y"],
            "label": ["MET", "MET", "UNMET", "MET", "UNMET", "MET", "MET"],
        }
    )
    v = pl.DataFrame({"id": [1, 2, 3], "criterion": "a", "verdict": ["MET", "MET", "MET"]})
    out = rt.agreement(v, h, raters="consensus", n_resamples=50, seed=0)
    acc = out.filter(pl.col("metric") == "accuracy").row(0, named=True)
    assert acc["n"] == 2 and acc["n_excluded"] == 1 and acc["value"] == 1.0  # item 2 is a tie
    kappa = out.filter(pl.col("metric") == "cohen_kappa").row(0, named=True)
    assert kappa["value"] is None and kappa["n_degenerate"] == 50  # one class only: undefined
    # a unit whose only label is NA is excluded and counted, not dropped silently
    h_na = pl.concat([h, pl.DataFrame({"id": [4], "criterion": "a", "rater": "x", "label": "CANNOT_ASSESS"})])
    v_na = pl.concat([v, pl.DataFrame({"id": [4], "criterion": "a", "verdict": "MET"})])
    acc = (
        rt.agreement(v_na, h_na, raters="consensus", n_resamples=0)
        .filter(pl.col("metric") == "accuracy")
        .row(0, named=True)
    )
    assert acc["n"] == 2 and acc["n_excluded"] == 2
    # a single pair (n = 1) does not crash
    one = rt.agreement(v.head(1), h.filter(pl.col("id") == 1, pl.col("rater") == "x"), n_resamples=20, seed=0)
    assert one.filter(pl.col("metric") == "accuracy")["value"].item() == 1.0


def test_inter_rater_matches_metric_functions() -> None:
    _, h = _data(80)
    out = rt.inter_rater(h, RUBRIC, n_resamples=100, seed=0)
    got = {(c, k): x for c, k, x in out.select("criterion", "metric", "value").iter_rows()}
    wide = h.filter(pl.col("criterion") == "correct").pivot(on="rater", index="id", values="label").sort("id")
    r = wide.select(pl.col("ann", "bob").str.to_uppercase()).to_numpy()
    assert got[("correct", "fleiss_kappa")] == pytest.approx(m.fleiss_kappa(r))
    assert got[("correct", "gwet_ac1")] == pytest.approx(m.gwet_ac1(r))
    assert got[("correct", "krippendorff_alpha")] == pytest.approx(m.krippendorff_alpha(r))
    assert got[("correct", "cohen_kappa_pairwise")] == pytest.approx(m.cohen_kappa(r[:, 0], r[:, 1]))
    assert ("correct", "icc2") not in got  # ICC only for ordinal criteria
    wide = h.filter(pl.col("criterion") == "clarity").pivot(on="rater", index="id", values="label").sort("id")
    order = {"poor": 0.0, "ok": 1.0, "great": 2.0}
    r = wide.select(pl.col("ann", "bob").replace_strict(order, default=None, return_dtype=pl.Float64)).to_numpy()
    assert got[("clarity", "krippendorff_alpha")] == pytest.approx(m.krippendorff_alpha(r, level="ordinal"))
    assert got[("clarity", "icc2")] == pytest.approx(m.icc(r, kind="ICC2"))
    # the raters' counterpart of a judge's quadratic-weighted kappa, on the ordinal criterion only
    assert got[("clarity", "kappa_quadratic_pairwise")] == pytest.approx(
        m.cohen_kappa(r[:, 0], r[:, 1], weights="quadratic")
    )
    assert ("correct", "kappa_quadratic_pairwise") not in got
    assert (out["ci_low"].drop_nulls() <= out.filter(pl.col("ci_low").is_not_null())["value"] + 1e-12).all()


def test_inter_rater_reproduces_published_krippendorff_example() -> None:
    import json

    from tests.conftest import DATA

    ex = json.loads((DATA.parents[1] / "datasets" / "agreement_reference" / "examples.json").read_text())[
        "krippendorff2011"
    ]
    rows = [(u, r, val) for u, unit in enumerate(ex["ratings"]) for r, val in enumerate(unit) if val is not None]
    h = pl.DataFrame(rows, schema=["id", "rater", "label"], orient="row").with_columns(
        pl.lit("c").alias("criterion"), pl.col("rater").cast(pl.String)
    )
    out = rt.inter_rater(h, n_resamples=0)
    got = dict(out.select("metric", "value").iter_rows())
    assert round(got["krippendorff_alpha"], 3) == ex["expected"]["alpha"]["ordinal"]  # numeric labels: ordinal
    assert got["gwet_ac1"] == pytest.approx(ex["expected"]["gwet_ac1"], abs=5e-6)
    assert got["percent_agreement"] == pytest.approx(ex["expected"]["percent_agreement"], abs=5e-6)


def test_single_rater_is_a_clear_error_not_a_table_of_nulls() -> None:
    h = pl.DataFrame({"id": [1, 2], "criterion": "a", "rater": "x", "label": ["MET", "UNMET"]})
    with pytest.raises(ValueError, match=r"found 1 \(\['x'\]\).*at least two raters"):
        rt.inter_rater(h, n_resamples=10, seed=0)


def test_compare_detects_a_real_difference_and_not_a_fake_one() -> None:
    v, h = _data(150, seed=3)
    worse = v.with_columns(
        pl.when(pl.col("criterion") == "correct").then(pl.lit("MET")).otherwise(pl.col("verdict")).alias("verdict")
    )
    out = rt.compare(v, worse, h, RUBRIC, metric="cohen_kappa", n_resamples=500, seed=0, names=("good", "lazy"))
    row = out.filter(pl.col("criterion") == "correct").row(0, named=True)
    assert row["diff"] > 0.3 and row["p_value"] < 0.01 and row["ci_low"] > 0
    same = out.filter(pl.col("criterion") == "error").row(0, named=True)
    assert same["diff"] == 0 and same["p_value"] == 1.0
    score = rt.compare(v, worse, h, RUBRIC, metric="pearson", n_resamples=300, seed=0)
    assert score["criterion"].item() == SCORE and score["diff"].item() > 0


def test_numeric_option_labels_match_numeric_verdicts() -> None:
    rubric = rt.Rubric.from_dict(
        [
            {
                "name": "pick",
                "requirement": "which",
                "scale": "nominal",
                "options": [{"label": "1", "value": 1.0}, {"label": "2", "value": 0.0}],
            }
        ]
    )
    v = pl.DataFrame({"id": [1, 2, 3], "criterion": "pick", "verdict": ["1", "2.0", "1"]})
    h = pl.DataFrame({"id": [1, 2, 3], "criterion": "pick", "label": [1, 2, 2]})
    out = rt.agreement(v, h, rubric, n_resamples=0, level="criterion", metrics=["accuracy"])
    assert out["value"].item() == pytest.approx(2 / 3)


def test_rmse_affine_is_opt_in_and_bootstrapped() -> None:
    rng = np.random.default_rng(3)
    n = 300
    h = rng.integers(1, 5, n).astype(float)
    j = 0.5 * h + rng.normal(0, 1, n) + 1
    judge, human = pl.DataFrame({"id": range(n), "score": j}), pl.DataFrame({"id": range(n), "score": h})
    assert "rmse_affine" not in rt.agreement(judge, human, n_resamples=0)["metric"].to_list()
    a = rt.agreement(judge, human, metrics=["rmse", "rmse_affine"], n_resamples=300, seed=0)
    row = a.filter(pl.col("metric") == "rmse_affine").row(0, named=True)
    assert row["value"] == pytest.approx(m.rmse_affine(h, j))
    assert row["ci_low"] < row["value"] < row["ci_high"]
    assert row["value"] < a.filter(pl.col("metric") == "rmse")["value"][0]  # this judge is miscalibrated


def test_compare_checks_its_options_as_agreement_does() -> None:
    v, h = _data(30)
    for kw, message in [
        ({"cannot_assess": "skip"}, "cannot_assess must be"),
        ({"raters": "bogus"}, "raters must be"),
        ({"names": ("a", "a")}, "names must be two different strings"),
        ({"seed": -1}, "seed must be an int >= 0"),
    ]:
        with pytest.raises(ValueError, match=message):
            rt.compare(v, v, h, RUBRIC, n_resamples=0, **kw)


def test_a_numeric_criterion_is_compared_on_its_numbers() -> None:
    """Before: with a rubric, the judge's numbers on a numeric criterion were refused as "not allowed"."""
    from sklearn.metrics import cohen_kappa_score

    rng = {"min": 1, "max": 5, "step": 1}
    rubric = rt.Rubric.from_dict([{"name": "n", "requirement": "a 1-5 rating", "range": rng}])
    judge, human = [1, 3, 5, 2, 4, 4, 1, 5], [2, 3, 5, 2, 5, 3, 1, 4]
    v = pl.DataFrame({"id": range(8), "criterion": "n", "verdict": [str(x) for x in judge]})
    h = pl.DataFrame({"id": range(8), "criterion": "n", "label": [str(x) for x in human]})
    t = rt.agreement(v, h, rubric, n_resamples=0, metrics=["kappa_quadratic", "mae"])
    got = {m: x for c, m, x in t.select("criterion", "metric", "value").iter_rows() if c == "n"}
    assert got["kappa_quadratic"] == pytest.approx(cohen_kappa_score(judge, human, weights="quadratic"))
    assert got["mae"] == pytest.approx(np.mean(np.abs(np.subtract(judge, human))))  # in the rating's own units


def test_a_refused_label_is_quoted_as_written_and_an_na_on_a_numeric_criterion_says_why() -> None:
    scale = {"min": 1, "max": 5, "step": 1}
    rubric = rt.Rubric.from_dict([{"name": "b", "requirement": "x"}, {"name": "n", "requirement": "r", "range": scale}])
    human = pl.DataFrame({"id": [1, 2], "criterion": "b", "label": ["MET", "MET"]})
    typo = pl.DataFrame({"id": [1, 2], "criterion": "b", "verdict": ["MTE", "MET"]})
    with pytest.raises(ValueError, match=r"verdicts: 1 label\(s\) not allowed by the rubric; .*label='MTE'$"):
        rt.agreement(typo, human, rubric, n_resamples=0)
    numeric = pl.DataFrame({"id": [1, 2], "criterion": "n", "label": ["NA", "3"]})
    verdicts = numeric.rename({"label": "verdict"}).with_columns(pl.lit("3").alias("verdict"))
    with pytest.raises(ValueError, match="this criterion has no NA label: leave the label null"):
        rt.agreement(verdicts, numeric, rubric, n_resamples=0)


def test_a_metric_that_does_not_apply_to_a_criterion_is_said_so() -> None:
    """Before: metrics=["f1"] on an ordinal or numeric criterion returned an empty table without a word."""
    scale = {"min": 1, "max": 5, "step": 1}
    rubric = rt.Rubric.from_dict([{"name": "n", "requirement": "r", "range": scale}, {"name": "b", "requirement": "x"}])
    human = pl.DataFrame({"id": [1, 2, 3, 4] * 2, "criterion": ["n"] * 4 + ["b"] * 4,
                          "label": ["1", "2", "3", "4", "MET", "UNMET", "MET", "MET"]})  # fmt: skip
    verdicts = human.rename({"label": "verdict"})
    only_n = pl.col("criterion") == "n"
    with pytest.raises(ValueError, match=r"agreement: no metric asked for applies: \['f1'\] on \{'criterion': 'n'\}"):
        rt.agreement(verdicts.filter(only_n), human.filter(only_n), rubric, metrics=["f1"], level="criterion")
    with pytest.warns(UserWarning, match=r"agreement: left out \['f1'\] on \{'criterion': 'n'\} \(ordinal\)"):
        t = rt.agreement(verdicts, human, rubric, metrics=["f1"], level="criterion", n_resamples=0)
    assert t.select("criterion", "metric").rows() == [("b", "f1")]


def test_a_nan_label_is_a_missing_label_as_null_is() -> None:
    rubric = rt.Rubric.from_dict([{"name": "q", "requirement": "Quality", "range": {"min": 1, "max": 5, "step": 1}}])
    v = pl.DataFrame({"id": range(6), "criterion": "q", "verdict": ["1", "2", "3", "4", "5", "3"]})
    got = []
    for missing in (None, float("nan")):
        h = pl.DataFrame({"id": range(6), "criterion": "q", "label": [1.0, 2.0, missing, 4.0, 5.0, 3.0]})
        with pytest.warns(UserWarning, match=r"1 row\(s\) have no label \(null or NaN\) and are left out"):
            got.append(rt.agreement(v, h, rubric, n_resamples=0, level="criterion"))
    assert got[0].equals(got[1]) and got[0].filter(pl.col("metric") == "accuracy")["n"].item() == 5


def test_labels_that_share_no_value_with_the_verdicts_are_flagged() -> None:
    v = pl.DataFrame({"id": [1, 2, 3], "criterion": "c", "verdict": ["MET", "UNMET", "MET"]})
    coded = pl.DataFrame({"id": [1, 2, 3], "criterion": "c", "label": [1, 0, 1]})
    words = r"'c': the verdicts \(\['MET', 'UNMET'\]\) and the human labels \(\['0', '1'\]\)"
    with pytest.warns(UserWarning, match=words):
        rt.agreement(v, coded, n_resamples=0)
    mapped = coded.with_columns(pl.col("label").replace_strict({1: "MET", 0: "UNMET"}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same labels written alike: no warning, full agreement
        t = rt.agreement(v, mapped, n_resamples=0)
    assert t.filter(pl.col("metric") == "accuracy")["value"].item() == 1.0


def test_labels_with_some_raters_unnamed_are_flagged() -> None:
    v, h = _data(10)
    partly = h.with_columns(
        pl.when((pl.col("id") == "s0") & (pl.col("rater") == "ann"))
        .then(None)
        .otherwise(pl.col("rater"))
        .alias("rater")
    )
    with pytest.warns(UserWarning, match=r"rows have no rater \(null\); they count as one more rater"):
        rt.agreement(v, partly, RUBRIC, n_resamples=0)

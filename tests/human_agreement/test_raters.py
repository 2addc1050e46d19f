"""inter_rater: a metric asked for that does not apply says so."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt

LABELS = ["MET", "MET", "UNMET", "MET", "UNMET", "UNMET", "MET", "MET", "UNMET", "UNMET"]
HUMAN = pl.DataFrame({"id": np.repeat(np.arange(5), 2), "criterion": "c", "rater": ["a", "b"] * 5, "label": LABELS})


def _icc21(x: np.ndarray) -> float:
    """Shrout and Fleiss ICC(2,1) from the two-way ANOVA mean squares."""
    n, k = x.shape
    grand = x.mean()
    msr = k * ((x.mean(1) - grand) ** 2).sum() / (n - 1)
    msc = n * ((x.mean(0) - grand) ** 2).sum() / (k - 1)
    sse = ((x - x.mean(1, keepdims=True) - x.mean(0, keepdims=True) + grand) ** 2).sum()
    mse = sse / ((n - 1) * (k - 1))
    return float((msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n))


def test_icc_asked_for_on_a_binary_criterion_is_computed_on_its_0_1_values() -> None:
    """Before: metrics=["icc2"] on a binary criterion returned an empty table without a word."""
    t = rt.inter_rater(HUMAN, metrics=["icc2"], n_resamples=0)
    x = (np.array(LABELS) == "MET").astype(float).reshape(5, 2)
    assert t["metric"].to_list() == ["icc2"] and t["value"].item() == pytest.approx(_icc21(x))
    default = rt.inter_rater(HUMAN, n_resamples=0)["metric"].to_list()
    assert "icc2" not in default  # not offered unasked on binary labels


def test_an_ordered_metric_on_nominal_labels_is_refused_or_left_out_with_a_warning() -> None:
    nominal = rt.Rubric.from_dict(
        [{"name": "c", "requirement": "which", "scale": "nominal",
          "options": [{"label": "MET", "value": 1.0}, {"label": "UNMET", "value": 0.0}]}]
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"no metric asked for applies: \['icc2'\] on \{'criterion': 'c'\}"):
        rt.inter_rater(HUMAN, nominal, metrics=["icc2"], n_resamples=0)
    with pytest.warns(UserWarning, match=r"left out \['icc3'\]"):
        t = rt.inter_rater(HUMAN, nominal, metrics=["icc3", "fleiss_kappa"], n_resamples=0)
    assert t["metric"].to_list() == ["fleiss_kappa"]


def test_a_label_outside_the_rubric_is_refused_not_silently_excluded() -> None:
    """Before: a typo ("MTE") was dropped and only ``n_excluded`` showed it; agreement() refused it."""
    rubric = rt.Rubric.from_dict([{"name": "c", "requirement": "r"}])

    def with_label(text: str) -> pl.DataFrame:
        fourth = pl.int_range(pl.len()) == 3
        return HUMAN.with_columns(pl.when(fourth).then(pl.lit(text)).otherwise("label").alias("label"))

    with pytest.raises(ValueError, match=r"human labels: 1 label\(s\) not allowed by the rubric; .*label='MTE'"):
        rt.inter_rater(with_label("MTE"), rubric, n_resamples=0)
    excluded = rt.inter_rater(with_label("CANNOT_ASSESS"), rubric, n_resamples=0)["n_excluded"]
    assert excluded.unique().to_list() == [1]  # an NA is missing, as documented


@pytest.mark.parametrize("rng", [{"min": 1, "max": 5}, {"min": 1, "max": 5, "step": 1}])
def test_a_numeric_criterion_is_rated_on_its_numbers(rng: dict[str, float]) -> None:
    """Before: with a rubric, a numeric criterion's labels were all excluded and the table came back empty."""
    from sklearn.metrics import cohen_kappa_score

    rubric = rt.Rubric.from_dict([{"name": "n", "requirement": "a 1-5 rating", "range": rng}])
    a, b = [1, 3, 5, 2, 4, 4, 1, 5], [2, 3, 5, 2, 5, 3, 1, 4]
    human = pl.DataFrame({"id": list(range(8)) * 2, "criterion": "n", "rater": ["x"] * 8 + ["y"] * 8,
                          "label": [str(v) for v in a + b]})  # fmt: skip
    t = rt.inter_rater(human, rubric, metrics=["kappa_quadratic_pairwise", "icc2"], n_resamples=0)
    got = dict(t.select("metric", "value").iter_rows())
    assert t["n_excluded"].to_list() == [0, 0]
    # every grid point of a stepped range counts in the weights; a continuous one ranks what it sees
    labels = [1, 2, 3, 4, 5]
    assert got["kappa_quadratic_pairwise"] == pytest.approx(cohen_kappa_score(a, b, labels=labels, weights="quadratic"))
    assert got["icc2"] == pytest.approx(_icc21(np.array([a, b], dtype=float).T))
    for bad in ("7", "NA"):  # outside the range; a numeric verdict has no NA
        with pytest.raises(ValueError, match=f"label='{bad}'"):
            rt.inter_rater(human.with_columns(pl.col("label").replace("3", bad)), rubric, n_resamples=0)


def test_no_metric_and_a_single_resample_are_refused() -> None:
    """Before: ``metrics=[]`` meant every metric, and ``n_resamples=1`` gave an interval whose ends were equal."""
    with pytest.raises(ValueError, match=r"metrics=\[\] asks for no inter-rater metric"):
        rt.inter_rater(HUMAN, metrics=[])
    with pytest.raises(ValueError, match="n_resamples=1 would give an interval from one resample"):
        rt.inter_rater(HUMAN, n_resamples=1)
    verdicts = HUMAN.filter(pl.col("rater") == "a").rename({"label": "verdict"}).drop("rater")
    with pytest.raises(ValueError, match=r"metrics=\[\] asks for no agreement metric"):
        rt.agreement(verdicts, HUMAN, metrics=[])


def test_too_few_resamples_for_the_tails_warn() -> None:
    """Before: ``n_resamples=2`` returned a "95%" interval that did not hold the estimate, without a word."""
    with pytest.warns(UserWarning, match=r"n_resamples=2 leaves less than one resample in each tail of a 95% interval"):
        rt.inter_rater(HUMAN, n_resamples=2)
    with pytest.warns(UserWarning, match="use at least 20"):  # a 90% interval needs fewer
        rt.inter_rater(HUMAN, n_resamples=10, ci=0.9)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt.inter_rater(HUMAN, n_resamples=40)  # enough: no warning


def test_a_continuous_numeric_criterion_weighs_kappa_by_distance_on_its_finest_grid() -> None:
    """Before: 4.9 against 5 on a 1-5 range counted as half the scale (ranks of the values seen)."""
    from sklearn.metrics import cohen_kappa_score

    rubric = rt.Rubric.from_dict([{"name": "n", "requirement": "a 1-5 rating", "range": {"min": 1, "max": 5}}])
    a, b = [1, 4.9, 5, 5, 1, 4.9], [1, 5, 4.9, 5, 1, 4.9]
    human = pl.DataFrame({"id": list(range(6)) * 2, "criterion": "n", "rater": ["x"] * 6 + ["y"] * 6,
                          "label": [str(v) for v in a + b]})  # fmt: skip
    got = rt.inter_rater(human, rubric, metrics=["kappa_quadratic_pairwise"], n_resamples=0)["value"].item()
    grid = {round(1 + i / 10, 1): i for i in range(41)}  # 1.0, 1.1, ..., 5.0
    want = cohen_kappa_score([grid[v] for v in a], [grid[v] for v in b], labels=list(range(41)), weights="quadratic")
    assert got == pytest.approx(want) and got > 0.99
    finer = human.with_columns((pl.col("label").cast(pl.Float64) + 0.01).cast(pl.String))  # a 0.01 grid: 400 levels
    with pytest.warns(
        UserWarning, match="need more than 41 levels on 1 to 5, so they are taken as the distinct values seen"
    ):
        rt.inter_rater(finer.filter(pl.col("label").cast(pl.Float64) <= 5), rubric, n_resamples=0)

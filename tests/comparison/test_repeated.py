"""consistency: the same submissions graded again, per criterion, against hand counts and inter_rater."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt

RUB = rt.Rubric.from_dict([{"name": "a", "requirement": "A"}, {"name": "b", "weight": 2, "requirement": "B"}])


def _run(seed: int, flip_b: float) -> pl.DataFrame:
    """40 submissions: criterion a always judged the same way, b flipped with probability flip_b."""
    rng = np.random.default_rng(seed)
    base = np.random.default_rng(0).random((40, 2)) < 0.5
    b = base[:, 1] ^ (rng.random(40) < flip_b)
    rows = [(i, "a", bool(base[i, 0])) for i in range(40)] + [(i, "b", bool(b[i])) for i in range(40)]
    return pl.DataFrame(rows, schema=["id", "criterion", "met"], orient="row").select(
        "id", "criterion", pl.when("met").then(pl.lit("MET")).otherwise(pl.lit("UNMET")).alias("verdict")
    )


def test_a_stable_criterion_and_a_noisy_one() -> None:
    runs = [_run(s, 0.3) for s in (1, 2, 3)]
    t = rt.consistency(*runs, rubric=RUB, n_resamples=200, seed=0)
    get = {(r["criterion"], r["metric"]): r for r in t.iter_rows(named=True)}
    assert get[("a", "all_agree")]["value"] == 1.0 and get[("a", "fleiss_kappa")]["value"] == pytest.approx(1.0)
    same = np.mean([len({r[i] for r in (x.filter(pl.col("criterion") == "b")["verdict"].to_list() for x in runs)}) == 1
                    for i in range(40)])  # fmt: skip
    assert get[("b", "all_agree")]["value"] == pytest.approx(same) and same < 0.9
    ref = rt.inter_rater(
        pl.concat([r.with_columns(pl.lit(f"run {k + 1}").alias("rater")) for k, r in enumerate(runs)]).rename(
            {"verdict": "label"}
        ),
        RUB,
        metrics=["fleiss_kappa"],
        n_resamples=0,
    )
    assert get[("b", "fleiss_kappa")]["value"] == pytest.approx(ref.filter(pl.col("criterion") == "b")["value"][0])
    assert get[("b", "fleiss_kappa")]["ci_low"] < get[("b", "fleiss_kappa")]["value"]
    sd = get[("__score__", "score_sd")]
    assert sd["value"] > 0 and sd["n_items"] == 40
    # rubrify's consistency: 1 - the mean coefficient of variation of each submission's score
    by_run = np.column_stack([rt.score(r, RUB).sort("id")["score"].to_numpy() for r in runs])
    mean, spread = by_run.mean(axis=1), by_run.std(axis=1)
    cv = np.where(mean != 0, spread / np.where(mean != 0, mean, 1), np.where(spread == 0, 0.0, 1.0))
    assert get[("__score__", "score_consistency")]["value"] == pytest.approx(max(0.0, 1 - cv.mean()))
    with pytest.raises(ValueError, match="two or more runs"):
        rt.consistency(runs[0], rubric=RUB)


def test_discrimination_entropy_in_the_rubric_report() -> None:
    always = pl.DataFrame({"id": range(10), "criterion": "a", "verdict": "MET"})
    half = pl.DataFrame({"id": range(10), "criterion": "b", "verdict": ["MET", "UNMET"] * 5})
    rep = rt.rubric_report(pl.concat([always, half]), rubric=RUB)
    ent = dict(zip(rep.table["criterion"], rep.table["entropy"], strict=True))
    assert ent["a"] == 0.0 and ent["b"] == pytest.approx(1.0)


def test_the_rubric_report_says_how_well_the_scores_discriminate() -> None:
    """rubrify's discrimination: the normalised entropy of the score distribution."""
    same = pl.DataFrame({"id": range(10), "criterion": "a", "verdict": "MET"}).vstack(
        pl.DataFrame({"id": range(10), "criterion": "b", "verdict": "MET"})
    )
    flat = rt.rubric_report(same, rubric=RUB)
    assert flat.discrimination == 0.0 and any("scores bunch up" in f for f in flat.findings)
    mixed = pl.concat([_run(s, 0.3) for s in (1,)])
    rep = rt.rubric_report(mixed, rubric=RUB)
    scores = rt.score(mixed, RUB)["score"].to_numpy()
    assert rep.discrimination == pytest.approx(rt.metrics.discrimination(scores, bins=10))
    assert "how the rubric scores spread" in rep._repr_html_()


def test_a_repeat_answered_from_the_response_cache_draws_a_warning() -> None:
    """Before: grading twice with the default cache gave all_agree 1 and kappa 1 without a word."""
    first = _run(1, 0.0).with_columns(pl.lit(False).alias("cached"))
    again = first.with_columns(pl.lit(True).alias("cached"))
    with pytest.warns(UserWarning, match=r"run 2's answers to run 1's submissions all came from the response cache"):
        rt.consistency(first, again, rubric=RUB, n_resamples=0)
    new = again.head(2).with_columns(pl.col("id") + 100, pl.lit(False).alias("cached"))  # one fresh submission more
    with pytest.warns(UserWarning, match=r"all came from the response cache"):  # before: no warning here
        rt.consistency(first, pl.concat([again, new]), rubric=RUB, n_resamples=0)

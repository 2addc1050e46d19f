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
    with pytest.raises(ValueError, match="two or more runs"):
        rt.consistency(runs[0], rubric=RUB)


def test_discrimination_entropy_in_the_rubric_report() -> None:
    always = pl.DataFrame({"id": range(10), "criterion": "a", "verdict": "MET"})
    half = pl.DataFrame({"id": range(10), "criterion": "b", "verdict": ["MET", "UNMET"] * 5})
    rep = rt.rubric_report(pl.concat([always, half]), rubric=RUB)
    ent = dict(zip(rep.table["criterion"], rep.table["entropy"], strict=True))
    assert ent["a"] == 0.0 and ent["b"] == pytest.approx(1.0)

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.grading.votes import aggregate_votes

VALUES = {"MET": 1.0, "UNMET": 0.0, "CANNOT_ASSESS": None, "lo": 0.0, "mid": 0.5, "hi": 1.0, "na": None}


def votes(labels, weight=10.0, judge_weights=None, errors=None):
    n = len(labels)
    return pl.DataFrame(
        {
            "__row": [0] * n,
            "id": ["x"] * n,
            "criterion": ["c"] * n,
            "verdict": labels,
            "value": [VALUES.get(lab) if lab is not None else None for lab in labels],
            "weight": [weight] * n,
            "error": errors or [None] * n,
            "judge_weight": judge_weights or [1.0] * n,
            "judge": [f"j{i}" for i in range(n)],
            "prompt_tokens": [1] * n,
            "completion_tokens": [1] * n,
            "cost_usd": [0.1] * n,
            "cached": [False] * n,
            "attempts": [1] * n,
            "latency_s": [0.1] * n,
        },
        schema_overrides={"verdict": pl.String, "value": pl.Float64, "error": pl.String},
    )


def agg(v, method):
    return aggregate_votes(v, {}, method).row(0, named=True)


@pytest.mark.parametrize(
    ("labels", "weight", "method", "expected"),
    [
        (["MET", "MET", "UNMET"], 10, "majority", "MET"),
        (["MET", "UNMET"], 10, "majority", "UNMET"),  # tie -> score-minimising for a reward
        (["MET", "UNMET"], -10, "majority", "MET"),  # tie -> penalty applied
        (["CANNOT_ASSESS", "MET"], 10, "majority", "MET"),  # a real verdict beats abstention on a tie
        (["MET", "UNMET", "UNMET"], 10, "any", "MET"),
        (["MET", "MET", "UNMET"], 10, "unanimous", "UNMET"),
        (["MET", "MET"], 10, "unanimous", "MET"),
        (["lo", "hi", "mid"], 10, "mean", "mid"),
        (["lo", "hi"], 10, "mean", "lo"),  # 0.5 is equidistant from lo and hi: the lower score
        (["lo", "mid", "hi", "hi"], 10, "median", "mid"),  # even count: lower middle for a reward
        (["lo", "mid", "hi", "hi"], -10, "median", "hi"),  # ...and the higher one for a penalty
    ],
)
def test_methods_and_tie_breaks(labels, weight, method, expected):
    assert agg(votes(labels, weight), method)["verdict"] == expected


def test_weighted_follows_judge_weight():
    assert agg(votes(["MET", "UNMET", "UNMET"], judge_weights=[3.0, 1.0, 1.0]), "weighted")["verdict"] == "MET"


def test_errors_do_not_vote_and_all_errors_stay_an_error():
    r = agg(votes(["MET", None, None], errors=[None, "timeout", "timeout"]), "majority")
    assert r["verdict"] == "MET" and r["error"] is None
    r = agg(votes([None, None], errors=["e1", "e2"]), "majority")
    assert r["verdict"] is None and r["error"].startswith("all 2 judges failed")
    assert r["cost_usd"] == pytest.approx(0.2)


def test_unknown_method():
    with pytest.raises(ValueError, match="aggregate must be one of"):
        aggregate_votes(votes(["MET"]), {}, "vibes")


def test_mean_ties_are_exact_ties_despite_float_rounding():
    # options 0.68 and 1.0: the mean 0.84 is equally far from both on paper (0.16), but not in
    # floating point; the docstring promises the score-minimising label on a tie
    v = votes(["a", "b"]).with_columns(pl.Series("value", [0.68, 1.0]))
    assert agg(v, "mean")["verdict"] == "a"
    assert agg(v.with_columns(pl.col("weight") * -1), "mean")["verdict"] == "b"  # a penalty: the higher value


@pytest.mark.parametrize("method", ["any", "unanimous"])
def test_equal_value_options_do_not_depend_on_judge_order(method):
    # options "x" (index 0) and "y" (index 1) are worth the same: the lowest index wins either way
    options = pl.DataFrame(
        {"criterion": ["c", "c"], "verdict": ["y", "x"], "rank": [1, 0], "opt_value": [0.5, 0.5], "nominal": False},
        schema_overrides={"rank": pl.Int64},
    )
    for order in (["y", "x"], ["x", "y"]):
        v = votes(order).with_columns(pl.lit(0.5).alias("value"))
        assert aggregate_votes(v, {}, method, options).row(0, named=True)["verdict"] == "x", order


def test_weighted_mean_snaps_to_the_option_nearest_the_judge_weighted_mean():
    v = votes(["hi", "lo", "lo"], judge_weights=[8.0, 1.0, 1.0])
    assert agg(v, "mean")["verdict"] == "lo"  # mean 1/3: of the voted labels, 'lo' (0) is nearest
    assert agg(v, "weighted_mean")["verdict"] == "hi"  # (8 * 1 + 0 + 0) / 10 = 0.8: nearer 'hi' (1) than 'lo'
    equal = votes(["hi", "lo", "lo"])
    assert agg(equal, "weighted_mean")["verdict"] == agg(equal, "mean")["verdict"]


# ------------------------------------------------------------------ autorubric's vote semantics
OPTS = [{"label": "lo", "value": 0.0}, {"label": "mid", "value": 0.5}, {"label": "hi", "value": 1.0}]


def _table(criterion: dict, labels: list[str]) -> tuple[pl.DataFrame, rt.Rubric]:
    rubric = rt.Rubric.from_dict([{"name": "q", "requirement": "x", **criterion}])
    n = len(labels)
    v = pl.DataFrame({"id": [1] * n, "criterion": ["q"] * n, "verdict": labels, "judge": [f"j{i}" for i in range(n)]})
    return v, rubric


def _one(v: pl.DataFrame, rubric: rt.Rubric, **kw) -> str:
    return rt.ensemble(v, rubric, **kw)["verdict"].item()


def test_abstentions_vote_by_default_and_are_dropped_as_autorubric_drops_them() -> None:
    v, r = _table({}, ["MET", "CANNOT_ASSESS", "CANNOT_ASSESS"])
    assert _one(v, r) == "CANNOT_ASSESS"
    assert _one(v, r, abstentions="drop") == "MET"
    assert _one(v, r, abstentions="drop", method="unanimous") == "MET"
    everyone_abstains, r = _table({}, ["CANNOT_ASSESS", "CANNOT_ASSESS"])
    assert _one(everyone_abstains, r, abstentions="drop") == "CANNOT_ASSESS"
    na, r = _table({"options": [*OPTS, {"label": "n/a", "value": 0, "na": True}]}, ["hi", "n/a", "n/a"])
    assert _one(na, r) == "n/a" and _one(na, r, abstentions="drop") == "hi"


def test_unanimous_disagreement_takes_the_lowest_label_or_abstains() -> None:
    nominal = {"options": OPTS, "scale_type": "nominal"}
    v, r = _table(nominal, ["hi", "mid"])
    assert _one(v, r, method="unanimous") == "mid"
    assert _one(v, r, method="unanimous", unanimous="abstain") == "CANNOT_ASSESS"  # no NA option: the channel
    v, r = _table({**nominal, "options": [*OPTS, {"label": "none", "value": 0, "na": True}]}, ["hi", "mid"])
    assert _one(v, r, method="unanimous", unanimous="abstain") == "none"  # the author's NA option
    binary, rb = _table({}, ["MET", "UNMET"])
    assert _one(binary, rb, method="unanimous", unanimous="abstain") == "UNMET"  # binary: autorubric's MET-only-if-all
    ordinal, ro = _table({"options": OPTS, "scale_type": "ordinal"}, ["hi", "mid"])
    assert _one(ordinal, ro, method="unanimous", unanimous="abstain") == "mid"  # ordinal: autorubric's 'min'
    agreed, r = _table(nominal, ["hi", "hi"])
    assert _one(agreed, r, method="unanimous", unanimous="abstain") == "hi"
    scored = rt.score(rt.ensemble(v, r, method="unanimous", unanimous="abstain"), r)
    assert scored["cannot_assess_count"].item() == 1 and scored["score"].item() is None


@pytest.mark.parametrize(
    ("labels", "method", "voted", "option"),
    [
        (["lo", "hi"], "mean", "lo", "mid"),  # mean 0.5: no judge said 'mid', autorubric still picks it
        (["lo", "hi", "hi"], "mean", "hi", "mid"),  # 2/3: of the voted, 1 is nearer; of all, 0.5
        (["lo", "lo", "hi"], "mean", "lo", "mid"),  # 1/3: nearer 0.5 than 0
        (["lo", "mid", "hi", "hi"], "median", "mid", "mid"),  # midpoint .75 is as near 'mid' as 'hi': the lower
        (["lo", "hi"], "median", "lo", "mid"),  # even count: the lower vote, or the midpoint 0.5's option
    ],
)
def test_means_snap_to_voted_labels_or_to_every_option(labels, method, voted, option) -> None:
    v, r = _table({"options": OPTS}, labels)
    assert _one(v, r, method=method) == voted
    assert _one(v, r, method=method, snap="option") == option


def test_the_exact_centre_is_stated_and_the_rubric_aggregation_is_used() -> None:
    v, r = _table({"options": OPTS, "aggregation": "mean"}, ["lo", "hi", "hi"])
    out = rt.ensemble(v, r)  # the criterion's own aggregation, not the default majority
    assert out["explanation"].item() == "mean of 3 judges (mean 0.667): hi x2, lo x1"
    assert rt.ensemble(v, r, per_criterion={"q": "majority"})["explanation"].item().startswith("majority of 3")


def test_vote_rules_are_validated() -> None:
    v, r = _table({}, ["MET"])
    for kw in ({"abstentions": "ignore"}, {"unanimous": "nope"}, {"snap": "closest"}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            rt.ensemble(v, r, **kw)


def test_a_multi_choice_criterion_without_na_option_accepts_cannot_assess_as_na() -> None:
    c = rt.Rubric.from_dict([{"name": "q", "requirement": "x", "options": OPTS}])["q"]
    assert c.labels == ("lo", "mid", "hi")  # what the judge is offered (requests unchanged)
    assert c.canonical_label("cannot_assess") == "CANNOT_ASSESS" and c.value_of("CANNOT_ASSESS") is None
    from rubrictools.judge.parsing import parse_criterion

    assert parse_criterion('{"verdict": "CANNOT_ASSESS", "explanation": "no basis"}', c)[0] == "CANNOT_ASSESS"


def test_ensemble_rows_carry_the_vote_shares_so_expected_scores_use_the_exact_mean() -> None:
    v, r = _table({"options": OPTS}, ["lo", "hi", "hi"])
    out = rt.ensemble(v, r, method="mean")
    assert out["verdict"].item() == "hi" and out["distribution_source"].item() == "votes"
    shares = {d["label"]: d["prob"] for d in out["distribution"].item()}
    assert shares == pytest.approx({"lo": 1 / 3, "hi": 2 / 3})
    assert rt.score(out, r)["score"].item() == 1.0  # the label the mean snapped to
    assert rt.score(out, r, value="expected")["score"].item() == pytest.approx(2 / 3)  # the exact mean
    weighted = rt.ensemble(v, r, method="weighted_mean", judge_weights={"j0": 4.0})
    assert rt.score(weighted, r, value="expected")["score"].item() == pytest.approx(2 / 6)  # (4*0 + 1 + 1) / 6
    kept = rt.ensemble(v, r, method="mean", keep_votes=True)
    assert kept.height == 4 and kept["distribution"].null_count() == 3

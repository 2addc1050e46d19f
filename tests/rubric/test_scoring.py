from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rubrictools as rt
from rubrictools.rubric import Criterion, Option, Rubric


# --------------------------------------------------------------------------- reference
def reference_score(
    rubric: Rubric,
    labels: list[str | None],
    errors: list[bool],
    *,
    strategy: str,
    pc: float,
    normalize: bool,
    on_error: str,
) -> tuple[float | None, float | None]:
    """Plain-Python statement of the documented formulas (one submission)."""
    S = P = N = 0.0
    kept = 0
    any_na = False
    for c, lab, err in zip(rubric, labels, errors, strict=False):
        w = c.weight
        if err:
            if on_error == "null":
                return None, None
            if on_error == "skip":
                continue
            contribution = c.worst_value * w
        else:
            val = c.value_of(lab)
            if val is None:
                any_na = True
                if strategy in ("skip", "fail"):
                    continue
                if strategy == "worst":
                    contribution = c.worst_value * w
                else:
                    contribution = 0.0 if strategy == "zero" else (pc * w if w > 0 else 0.0)
            else:
                contribution = val * w
        S += contribution
        kept += 1
        if w > 0:
            P += w
        else:
            N += -w
    if kept == 0:
        return None, None
    if not normalize:
        sc = S
    elif P > 0:
        sc = min(1.0, max(0.0, S / P))
    elif N > 0:
        sc = min(1.0, max(0.0, 1 + S / N))
    else:
        sc = 0.0
    if strategy == "fail" and any_na:
        sc = 0.0
    return sc, S


weights = st.one_of(
    st.floats(-20, 20, allow_nan=False).map(lambda x: round(x, 3)),
    st.sampled_from([0.0, 10.0, -10.0, 1e-3]),
)


@st.composite
def criteria(draw):
    w = draw(weights)
    if draw(st.booleans()):
        return Criterion(requirement="r", weight=w)
    n = draw(st.integers(2, 5))
    values = draw(st.lists(st.floats(0, 1).map(lambda x: round(x, 4)), min_size=n, max_size=n))
    opts = [Option(label=f"o{i}", value=v) for i, v in enumerate(values)]
    if draw(st.booleans()):
        opts.append(Option(label="na", value=0.0, na=True))
    return Criterion(requirement="r", weight=w, options=opts)


@st.composite
def cases(draw):
    # a rubric of zero weights only is refused (it would score everything 0.0)
    crits = draw(st.lists(criteria(), min_size=1, max_size=8).filter(lambda cs: any(c.weight != 0 for c in cs)))
    rubric = Rubric(crits)
    labels, errors = [], []
    for c in rubric:
        labels.append(draw(st.sampled_from(list(c.labels))))
        errors.append(draw(st.booleans()) if draw(st.integers(0, 9)) == 0 else False)
    return rubric, labels, errors


def _table(rubric: Rubric, labels, errors, sid=0) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [sid] * len(labels),
            "criterion": list(rubric.names),
            "verdict": [None if e else lab for lab, e in zip(labels, errors, strict=False)],
            "error": ["boom" if e else None for e in errors],
        },
        schema={"id": pl.Int64, "criterion": pl.String, "verdict": pl.String, "error": pl.String},
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=cases(),
    strategy=st.sampled_from(["skip", "zero", "partial", "worst", "fail"]),
    pc=st.floats(0, 1),
    normalize=st.booleans(),
    on_error=st.sampled_from(["null", "skip", "worst"]),
)
def test_score_matches_reference(case, strategy, pc, normalize, on_error):
    rubric, labels, errors = case
    got = rt.score(
        _table(rubric, labels, errors),
        rubric,
        cannot_assess=strategy,
        partial_credit=pc,
        normalize=normalize,
        on_error=on_error,
    )
    exp_score, exp_raw = reference_score(
        rubric, labels, errors, strategy=strategy, pc=pc, normalize=normalize, on_error=on_error
    )
    row = got.row(0, named=True)
    assert row["error_count"] == sum(errors)
    if exp_score is None:
        assert row["score"] is None
    else:
        assert row["score"] == pytest.approx(exp_score, abs=1e-12)
        assert row["raw_score"] == pytest.approx(exp_raw, abs=1e-12)
    assert (row["error"] is not None) == (on_error == "null" and any(errors))


@settings(max_examples=60, deadline=None)
@given(st.lists(cases(), min_size=2, max_size=6))
def test_many_submissions_match_per_submission_scores(batch):
    # different rubrics per submission: score from the weight column (per-item rubrics)
    tables = []
    expected = []
    for i, (rubric, labels, _) in enumerate(batch):
        t = rt.validate_verdicts(_table(rubric, labels, [False] * len(labels), sid=i), rubric)
        tables.append(t)
        expected.append(
            reference_score(
                rubric, labels, [False] * len(labels), strategy="skip", pc=0.5, normalize=True, on_error="null"
            )[0]
        )
    got = rt.score(pl.concat(tables))
    assert got["id"].to_list() == list(range(len(batch)))
    for g, e in zip(got["score"].to_list(), expected, strict=False):
        assert (g is None and e is None) or g == pytest.approx(e, abs=1e-12)


# --------------------------------------------------------------------------- hand-checked
@pytest.fixture
def peer_rubric() -> Rubric:
    return Rubric.from_dict(
        [
            {"weight": 10.0, "requirement": "a"},
            {"weight": 5.0, "requirement": "b"},
            {"weight": -15.0, "requirement": "c"},
        ]
    )


@pytest.mark.parametrize(
    ("labels", "score", "raw"),
    [
        (["MET", "UNMET", "UNMET"], 10 / 15, 10.0),  # the peer documents' example: 0.6667, raw 10
        (["MET", "MET", "UNMET"], 1.0, 15.0),
        (["MET", "MET", "MET"], 0.0, 0.0),
        (["MET", "UNMET", "MET"], 0.0, -5.0),  # clamped at 0
        (["UNMET", "UNMET", "UNMET"], 0.0, 0.0),
    ],
)
def test_peer_documented_cases(peer_rubric, labels, score, raw):
    out = rt.score(_table(peer_rubric, labels, [False] * 3), peer_rubric)
    assert out["score"][0] == pytest.approx(score, abs=1e-12)
    assert out["raw_score"][0] == pytest.approx(raw)
    assert round(rt.Rubric.score(peer_rubric, labels), 4) == round(score, 4)


def test_all_negative_rubric():
    r = Rubric.from_dict([{"weight": -10, "requirement": "e1"}, {"weight": -30, "requirement": "e2"}])
    assert r.score(["UNMET", "UNMET"]) == 1.0
    assert r.score(["MET", "MET"]) == 0.0
    assert r.score(["MET", "UNMET"]) == pytest.approx(0.75)


def test_multichoice_and_na_strategies():
    r = Rubric.from_dict(
        [
            {"name": "a", "weight": 10, "requirement": "x"},
            {
                "name": "q",
                "weight": 10,
                "requirement": "y",
                "options": [
                    {"label": "lo", "value": 0},
                    {"label": "mid", "value": 0.5},
                    {"label": "hi", "value": 1},
                    {"label": "n/a", "na": True},
                ],
            },
        ]
    )
    assert r.score(["MET", "mid"]) == pytest.approx(0.75)
    assert r.score(["MET", "n/a"]) == 1.0  # skip
    assert r.score(["MET", "n/a"], cannot_assess="zero") == 0.5
    assert r.score(["MET", "n/a"], cannot_assess="partial", partial_credit=0.2) == pytest.approx(0.6)
    assert r.score(["MET", "n/a"], cannot_assess="fail") == 0.0
    assert r.score(["CANNOT_ASSESS", "n/a"]) is None  # nothing left to score
    assert r.score(["MET", "hi"], normalize=False) == 20.0


def test_failed_judge_call_is_never_silent():
    r = Rubric.from_dict(
        [{"name": "big", "weight": 10, "requirement": "x"}, {"name": "small", "weight": 1, "requirement": "y"}]
    )
    v = pl.DataFrame(
        {"id": ["s"] * 2, "criterion": ["big", "small"], "verdict": [None, "MET"], "error": ["parse: not JSON", None]}
    )
    out = rt.score(v, r)
    assert out["score"][0] is None
    assert out["error"][0] == "judge error on big: parse: not JSON"
    assert out["error_count"][0] == 1
    assert rt.score(v, r, on_error="skip")["score"][0] == 1.0  # explicit opt-in only
    assert rt.score(v, r, on_error="worst")["score"][0] == pytest.approx(1 / 11)


def test_missing_criterion_is_an_error_and_unknown_labels_raise():
    r = Rubric.from_dict([{"name": "a", "requirement": "x"}, {"name": "b", "requirement": "y"}])
    out = rt.score(pl.DataFrame({"id": [1, 2, 2], "criterion": ["a", "a", "b"], "verdict": ["MET"] * 3}), r)
    assert out["score"].to_list() == [None, 1.0]
    assert "missing verdict(s) for criteria: b" in out["error"][0]
    with pytest.raises(ValueError, match="verdict='maybe'"):
        rt.score(pl.DataFrame({"id": [1], "criterion": ["a"], "verdict": ["maybe"]}), r)
    with pytest.raises(ValueError, match=r"criteria \['zzz'\] are not in the rubric"):
        rt.score(pl.DataFrame({"id": [1], "criterion": ["zzz"], "verdict": ["MET"]}), r)
    with pytest.raises(ValueError, match="missing required column"):
        rt.score(pl.DataFrame({"id": [1], "verdict": ["MET"]}), r)
    with pytest.raises(ValueError, match="cannot_assess must be"):
        rt.score(pl.DataFrame({"id": [1], "criterion": ["a"], "verdict": ["MET"]}), r, cannot_assess="nah")  # type: ignore[arg-type]


def test_pandas_input_and_order_preserved():
    pd = pytest.importorskip("pandas")
    r = Rubric.from_dict([{"name": "a", "requirement": "x"}])
    v = pd.DataFrame({"id": ["z", "a", "m"], "criterion": ["a"] * 3, "verdict": ["met", "UNMET", " Met "]})
    out = rt.score(v, r)
    assert out["id"].to_list() == ["z", "a", "m"]
    assert out["score"].to_list() == [1.0, 0.0, 1.0]


def test_length_penalty():
    r = Rubric.from_dict([{"name": "a", "requirement": "x"}])
    v = pl.DataFrame({"id": [1, 2, 3], "criterion": ["a"] * 3, "verdict": ["MET", "MET", "UNMET"]})
    lp = rt.LengthPenalty(free_budget=10, max_cap=20, penalty_at_cap=0.5, exponent=2)
    out = rt.score(v, r, length_penalty=lp, lengths={1: 5, 2: 15, 3: 50})
    assert out["length_penalty"].to_list() == pytest.approx([0.0, 0.125, 0.5])
    assert out["score"].to_list() == pytest.approx([1.0, 0.875, 0.0])  # floored at 0
    words = rt.word_count(pl.DataFrame({"id": [1], "submission": ["one  two\nthree"]}))
    assert words["length"].to_list() == [3]
    with pytest.raises(ValueError, match="needs lengths"):
        rt.score(v, r, length_penalty=lp)
    with pytest.raises(ValueError, match="free_budget < max_cap"):
        rt.LengthPenalty(free_budget=5, max_cap=5)


def test_holistic_rows_use_raw_score_semantics():
    r = Rubric.from_dict(
        [{"weight": 10, "requirement": "a"}, {"weight": 6, "requirement": "b"}, {"weight": -4, "requirement": "c"}]
    )
    v = pl.DataFrame({"id": [1], "criterion": [rt.HOLISTIC], "verdict": ["85"], "value": [0.85]})
    out = rt.score(v, r)
    assert out["score"][0] == pytest.approx(0.85)
    assert out["raw_score"][0] == pytest.approx(0.85 * 16)


def test_ensemble_rows_are_selected_and_duplicates_need_a_judge():
    r = Rubric.from_dict([{"name": "a", "requirement": "x"}])
    v = pl.DataFrame(
        {"id": [1, 1, 1], "criterion": ["a"] * 3, "verdict": ["MET", "UNMET", "MET"], "judge": ["m1", "m2", "ensemble"]}
    )
    assert rt.score(v, r)["score"][0] == 1.0
    assert rt.score(v, r, judge="m2")["score"][0] == 0.0
    with pytest.raises(ValueError, match="pass judge="):
        rt.score(v.filter(pl.col("judge") != "ensemble"), r)


@pytest.mark.peers
@settings(max_examples=150, deadline=None)
@given(case=cases(), strategy=st.sampled_from(["skip", "zero", "partial", "worst"]), normalize=st.booleans())
def test_matches_autorubric_compute_score(case, strategy, normalize):
    ar = pytest.importorskip("autorubric")
    rubric, labels, _ = case
    crits = []
    for c in rubric:
        opts = (
            None
            if c.options is None
            else [ar.CriterionOption(label=o.label, value=o.value, na=o.na) for o in c.options]
        )
        crits.append(ar.Criterion(name=c.name, weight=c.weight, requirement=c.requirement, options=opts))
    ar_rubric = ar.Rubric(crits)
    strat = {
        "skip": ar.CannotAssessStrategy.SKIP,
        "zero": ar.CannotAssessStrategy.ZERO,
        "partial": ar.CannotAssessStrategy.PARTIAL,
        "worst": ar.CannotAssessStrategy.FAIL,  # autorubric's FAIL is our "worst" (README table)
    }[strategy]
    expected = ar_rubric.compute_score(labels, normalize=normalize, cannot_assess_strategy=strat, partial_credit=0.5)
    got = rubric.score(labels, cannot_assess=strategy, normalize=normalize)
    if expected is None:
        assert got is None
    else:
        assert got is not None and math.isclose(got, expected, abs_tol=1e-9)


def test_expected_value_scores_match_a_hand_computation() -> None:
    rubric = Rubric.from_dict(
        [
            {"name": "b", "weight": 10, "requirement": "x"},
            {
                "name": "m",
                "weight": 10,
                "requirement": "y",
                "options": [
                    {"label": "low", "value": 0},
                    {"label": "mid", "value": 0.5},
                    {"label": "high", "value": 1},
                ],
            },
        ]
    )
    dist = pl.List(pl.Struct({"label": pl.String, "prob": pl.Float64}))
    v = pl.DataFrame(
        {
            "id": [1, 1, 2, 2, 3, 3],
            "criterion": ["b", "m"] * 3,
            "verdict": ["MET", "high", "MET", "mid", "CANNOT_ASSESS", "low"],
            "distribution": [
                [{"label": "MET", "prob": 0.7}, {"label": "UNMET", "prob": 0.3}],
                [{"label": "low", "prob": 0.2}, {"label": "mid", "prob": 0.3}, {"label": "high", "prob": 0.5}],
                [
                    {"label": "MET", "prob": 0.6},
                    {"label": "CANNOT_ASSESS", "prob": 0.2},
                    {"label": "UNMET", "prob": 0.2},
                ],
                None,  # no distribution: the label's value
                [{"label": "CANNOT_ASSESS", "prob": 0.9}, {"label": "MET", "prob": 0.1}],  # NA verdict stays NA
                [{"label": "low", "prob": 1.0}],
            ],
        },
        schema_overrides={"distribution": dist},
    )
    s = rt.score(v, rubric, value="expected")
    # id 1: 10 * 0.7 + 10 * (0.5 * 0.3 + 1 * 0.5) = 13.5; id 2: 10 * 0.6 / 0.8 + 10 * 0.5 = 12.5
    assert s["raw_score"].to_list()[:2] == pytest.approx([13.5, 12.5])
    assert s["score"].to_list()[:2] == pytest.approx([0.675, 0.625])
    assert s.row(2, named=True)["cannot_assess_count"] == 1 and s["score"][2] == 0.0
    top = rt.score(v, rubric)
    assert top["raw_score"].to_list()[:2] == [20.0, 15.0]  # the default is unchanged
    with pytest.raises(ValueError, match="distribution=True"):
        rt.score(v.drop("distribution"), rubric, value="expected")
    with pytest.raises(ValueError, match="needs the rubric"):
        rt.score(v, value="expected")


def test_expected_value_scores_feed_score_level_agreement() -> None:
    rubric = Rubric.from_dict([{"name": "b", "weight": 10, "requirement": "x"}])
    rng = np.random.default_rng(0)
    p = rng.random(80)
    dist = pl.List(pl.Struct({"label": pl.String, "prob": pl.Float64}))
    v = pl.DataFrame(
        {
            "id": range(80),
            "criterion": "b",
            "verdict": np.where(p > 0.5, "MET", "UNMET"),
            "distribution": [[{"label": "MET", "prob": float(x)}, {"label": "UNMET", "prob": float(1 - x)}] for x in p],
        },
        schema_overrides={"distribution": dist},
    )
    human = pl.DataFrame({"id": range(80), "criterion": "b", "label": np.where(rng.random(80) < p, "MET", "UNMET")})
    expected = rt.score(v, rubric, value="expected")
    assert expected["score"].to_numpy() == pytest.approx(p)  # binary: p(MET)
    t = rt.agreement(expected, human, rubric, n_resamples=50, seed=0)
    assert t.filter(pl.col("metric") == "pearson")["value"].item() > 0.2


# ------------------------------------------------------------------ nested groups (rubrify's groups of groups)
NESTED = {
    "criteria": [
        {"name": "a", "weight": 2, "requirement": "a", "group": "facts"},
        {"name": "b", "weight": 1, "requirement": "b", "group": "facts"},
        {"name": "c", "weight": 1, "requirement": "c", "group": "style"},
        {"name": "d", "weight": -1, "requirement": "d", "group": "style"},
        {"name": "e", "weight": 1, "requirement": "e", "group": "safety"},
    ],
    "groups": [
        {"name": "facts", "weight": 3, "parent": "content"},
        {"name": "style", "weight": 1, "parent": "content", "aggregation": "min"},
        {"name": "content", "weight": 2},
        {"name": "safety", "weight": 1},
    ],
}


@pytest.mark.parametrize("content_agg", ["weighted_mean", "min", "max", "all", "any"])
def test_nested_groups_aggregate_their_child_groups(content_agg: str) -> None:
    spec = {
        **NESTED,
        "groups": [*NESTED["groups"][:2], {**NESTED["groups"][2], "aggregation": content_agg}, NESTED["groups"][3]],
    }
    r = Rubric.from_dict(spec)
    v = pl.DataFrame({"id": [1] * 5, "criterion": list("abcde"), "verdict": ["MET", "UNMET", "MET", "MET", "MET"]})
    out = rt.score(v, r).row(0, named=True)
    facts = 2 / 3  # weighted_mean of a (2, MET) and b (1, UNMET)
    style = min(1.0, 0.0)  # min of credits: c MET -> 1, penalty d MET -> 0
    content = {"weighted_mean": (3 * facts + 1 * style) / 4, "min": style, "max": facts, "all": 0.0, "any": 0.0}[
        content_agg
    ]
    assert out["score:facts"] == pytest.approx(facts) and out["score:style"] == pytest.approx(style)
    assert out["score:content"] == pytest.approx(content) and out["score:safety"] == 1.0
    assert out["score"] == pytest.approx((2 * content + 1 * 1.0) / 3)  # top-level groups only
    assert Rubric.from_dict(r.to_dict()) == r


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([{"name": "facts", "parent": "nowhere"}], "field 'parent': no other group is named 'nowhere'"),
        ([{"name": "facts", "parent": "style"}, {"name": "style", "parent": "facts"}], "holds criteria and groups"),
        ([{"name": "facts", "parent": "facts"}], "no other group is named 'facts'"),
    ],
)
def test_nested_group_errors_name_the_group(groups, message) -> None:
    crit = [{"name": "a", "requirement": "a", "group": "facts"}, {"name": "c", "requirement": "c", "group": "style"}]
    base = {"facts": {"name": "facts"}, "style": {"name": "style"}}
    for g in groups:
        base[g["name"]] = g
    with pytest.raises(ValueError, match=message):
        Rubric.from_dict({"criteria": crit, "groups": list(base.values())})


def test_a_cycle_of_parent_groups_is_refused() -> None:
    crit = [{"name": "a", "requirement": "a", "group": "leaf"}]
    groups = [{"name": "leaf", "parent": "x"}, {"name": "x", "parent": "y"}, {"name": "y", "parent": "x"}]
    with pytest.raises(ValueError, match="cycle"):
        Rubric.from_dict({"criteria": crit, "groups": groups})


@pytest.mark.parametrize("agg", ["weighted_mean", "weighted_sum", "min", "max", "all", "any"])
def test_one_aggregation_for_criteria_and_for_child_groups(agg: str) -> None:
    """A group of criteria and a group of one-criterion child groups with the same weights give
    the same sub-score: one aggregation serves both levels (rubric.group_scores)."""
    verdicts = ["MET", "UNMET", "MET", "CANNOT_ASSESS"]
    weights = [3, 1, 2, 1]
    flat = Rubric.from_dict(
        {
            "criteria": [
                {"name": n, "weight": w, "requirement": n, "group": "g"} for n, w in zip("abcd", weights, strict=True)
            ],
            "groups": [{"name": "g", "aggregation": agg}],
        }
    )
    nested = Rubric.from_dict(
        {
            "criteria": [{"name": n, "weight": 1, "requirement": n, "group": f"k{n}"} for n in "abcd"],
            "groups": [
                *({"name": f"k{n}", "weight": w, "parent": "g"} for n, w in zip("abcd", weights, strict=True)),
                {"name": "g", "aggregation": agg},
            ],
        }
    )
    v = pl.DataFrame({"id": [1] * 4, "criterion": list("abcd"), "verdict": verdicts})
    a, b = rt.score(v, flat).row(0, named=True), rt.score(v, nested).row(0, named=True)
    assert a["score:g"] == pytest.approx(b["score:g"]) and a["score"] == pytest.approx(b["score"])
    # an unassessed child (kd: its only criterion is CANNOT_ASSESS) is left out, as its criterion is
    assert b["score:kd"] is None
    if agg == "weighted_sum":
        assert a["raw:g"] == pytest.approx(b["raw:g"]) == 5.0

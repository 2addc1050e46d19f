"""Differential tests against the installed peers (the ``[peers]`` extra): thousands of random
rubrics and verdicts scored and aggregated by autorubric / ``rubric`` and by rubrictools must
agree everywhere except the differences docs/migrating.md documents, which are asserted as differences.

Everything here is generated from seeded numpy draws, so a failure names a reproducible case.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from typing import Any

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from rubrictools.testing import FakeLLMServer

pytestmark = pytest.mark.peers

N_RUBRICS = 3000


def _random_rubric(rng: np.random.Generator, binary_only: bool = False) -> list[dict[str, Any]]:
    """2-6 criteria: binary or multi-choice (2-5 options, sometimes an NA option), weights of
    either sign, some rubrics all penalties."""
    n = int(rng.integers(1, 7))
    all_penalties = rng.random() < 0.15
    crits = []
    for j in range(n):
        w = float(rng.choice([-1, 1]) * rng.integers(1, 21)) if not all_penalties else -float(rng.integers(1, 21))
        c: dict[str, Any] = {"name": f"c{j}", "weight": w, "requirement": f"requirement {j}"}
        if not binary_only and rng.random() < 0.5:
            k = int(rng.integers(2, 6))
            values = np.round(rng.random(k), 2)
            values[rng.integers(0, k)] = rng.choice([0.0, 1.0])  # often an exact 0 or 1
            c["options"] = [{"label": f"o{i}", "value": float(v)} for i, v in enumerate(values)]
            if rng.random() < 0.4:
                c["options"].append({"label": "n/a", "value": 0.0, "na": True})
            c["scale_type"] = str(rng.choice(["ordinal", "nominal"]))
        crits.append(c)
    if all(c["weight"] == 0 for c in crits):
        crits[0]["weight"] = 1.0
    return crits


def _random_label(rng: np.random.Generator, c: dict[str, Any]) -> str:
    if "options" not in c:
        return str(rng.choice(["MET", "UNMET", "CANNOT_ASSESS"], p=[0.45, 0.4, 0.15]))
    return str(rng.choice([o["label"] for o in c["options"]]))


@pytest.fixture(scope="module")
def cases() -> list[tuple[rt.Rubric, list[dict[str, Any]], list[str]]]:
    rng = np.random.default_rng(2026)
    out = []
    for _ in range(N_RUBRICS):
        spec = _random_rubric(rng)
        out.append((rt.Rubric.from_dict(spec), spec, [_random_label(rng, c) for c in spec]))
    return out


def _verdict_table(cases: list[tuple[rt.Rubric, list[dict[str, Any]], list[str]]]) -> pl.DataFrame:
    """All cases in one verdict table (per-item rubrics: weights, values and worst values as
    columns), so rubrictools scores them in one vectorised call."""
    rows = []
    for i, (rubric, _, labels) in enumerate(cases):
        for c, lab in zip(rubric, labels, strict=True):
            rows.append((i, c.name, lab, c.value_of(lab), c.weight, c.worst_value))
    return pl.DataFrame(
        rows, schema=["id", "criterion", "verdict", "value", "weight", "worst_value"], orient="row"
    ).with_columns(pl.col("id").cast(pl.Int64))


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize(
    ("ours", "theirs"), [("skip", "SKIP"), ("zero", "ZERO"), ("partial", "PARTIAL"), ("worst", "FAIL")]
)
def test_scores_equal_autorubric_compute_score(cases, ours: str, theirs: str, normalize: bool) -> None:
    ar = pytest.importorskip("autorubric")
    got = rt.score(_verdict_table(cases), cannot_assess=ours, normalize=normalize)["score"].to_list()  # type: ignore[arg-type]
    strategy = getattr(ar.CannotAssessStrategy, theirs)
    mismatches = []
    for i, (_, spec, labels) in enumerate(cases):
        their_rubric = ar.Rubric.from_dict(spec)
        want = their_rubric.compute_score(
            labels, normalize=normalize, cannot_assess_strategy=strategy, partial_credit=0.5
        )
        if not ((want is None and got[i] is None) or (got[i] is not None and math.isclose(got[i], want, abs_tol=1e-9))):
            mismatches.append((i, spec, labels, want, got[i]))
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ; first: {mismatches[0]}"


def test_our_fail_is_a_documented_difference(cases) -> None:
    """``cannot_assess="fail"`` zeroes the whole score when any criterion is unassessable
    (docs/migrating.md); autorubric's FAIL is our ``"worst"``. Where nothing is unassessable they agree."""
    table = _verdict_table(cases)
    fail = rt.score(table, cannot_assess="fail")
    worst = rt.score(table, cannot_assess="worst")
    assessed = fail["cannot_assess_count"] == 0
    assert fail.filter(assessed)["score"].equals(worst.filter(assessed)["score"])
    some_na = fail.filter(~assessed & fail["score"].is_not_null())
    assert some_na.height > 500 and (some_na["score"] == 0.0).all()
    assert (worst.filter(~assessed)["score"] > 0).sum() > 100  # autorubric's FAIL keeps partial scores


def test_rubric_package_per_criterion_scores_agree() -> None:
    rubric_pkg = pytest.importorskip("rubric")
    from rubric.autograders import PerCriterionGrader
    from rubric.types import CriterionReport

    rng = np.random.default_rng(7)
    grader = PerCriterionGrader(generate_fn=None)  # aggregate() needs no model
    specs, labels = [], []
    for _ in range(N_RUBRICS):
        spec = _random_rubric(rng, binary_only=True)
        specs.append(spec)
        labels.append([str(rng.choice(["MET", "UNMET"])) for _ in spec])
    rows = [
        (i, c["name"], lab, float(lab == "MET"), c["weight"])
        for i, (spec, labs) in enumerate(zip(specs, labels, strict=True))
        for c, lab in zip(spec, labs, strict=True)
    ]
    table = pl.DataFrame(rows, schema=["id", "criterion", "verdict", "value", "weight"], orient="row")
    for normalize in (True, False):
        ours = rt.score(table, normalize=normalize)

        async def theirs(spec, labs, normalize=normalize):
            reports = [
                CriterionReport(weight=c["weight"], requirement=c["requirement"], verdict=lab, reason="")
                for c, lab in zip(spec, labs, strict=True)
            ]
            return await grader.aggregate(reports, normalize=normalize)

        async def all_theirs():
            return [await theirs(s, lab) for s, lab in zip(specs, labels, strict=True)]

        reports = asyncio.run(all_theirs())
        np.testing.assert_allclose(ours["score"].to_numpy(), [r.score for r in reports], atol=1e-9)
        np.testing.assert_allclose(ours["raw_score"].to_numpy(), [r.raw_score for r in reports], atol=1e-9)
        assert rubric_pkg.Rubric.from_dict(specs[0]) is not None  # their loader takes our random files too


def test_rubric_package_holistic_scores_agree() -> None:
    """Holistic grading end to end (a loopback judge answering a random 0-100 score for each of
    300 per-row rubrics) against ``rubric``'s RubricAsJudgeGrader.aggregate of the same scores."""
    pytest.importorskip("rubric")
    from rubric.autograders import RubricAsJudgeGrader

    rng = np.random.default_rng(11)
    specs = [_random_rubric(rng, binary_only=True) for _ in range(300)]
    said = rng.integers(0, 101, len(specs))
    df = pl.DataFrame(
        {
            "id": range(len(specs)),
            "submission": [f"answer #{i}" for i in range(len(specs))],
            "rubric": [json.dumps(s) for s in specs],
        }
    )
    with FakeLLMServer() as server:
        server.script = lambda body: json.dumps(
            {"score": int(said[int(re.search(r"answer #(\d+)", json.dumps(body)).group(1))]), "explanation": "x"}  # type: ignore[union-attr]
        )
        v = rt.grade(
            df,
            model=rt.Judge(model="openai/gpt-4.1-mini", api_base=server.url, api_key="sk-test"),
            rubric_column="rubric",
            mode="holistic",
            cache=False,
            progress=False,
        )
    assert v["error"].null_count() == v.height
    grader = RubricAsJudgeGrader(generate_fn=None)
    for normalize in (True, False):
        ours = rt.score(v, normalize=normalize).sort("id")

        async def all_theirs(normalize=normalize):
            out = []
            for spec, s in zip(specs, said, strict=True):
                pos = sum(max(0.0, c["weight"]) for c in spec)
                neg = sum(-c["weight"] for c in spec if c["weight"] < 0)
                payload = {"llm_score": float(s), "total_positive_weight": pos, "total_negative_weight": neg}
                out.append(await grader.aggregate(payload, normalize=normalize))
            return out

        reports = asyncio.run(all_theirs())
        np.testing.assert_allclose(ours["score"].to_numpy(), [r.score for r in reports], atol=1e-9)
        np.testing.assert_allclose(ours["raw_score"].to_numpy(), [r.raw_score for r in reports], atol=1e-9)


# ------------------------------------------------------------------ ensembles
# (ours, autorubric's) method names per criterion kind; our autorubric-compatible vote rules are
# abstentions="drop", unanimous="abstain", snap="option" (the difference table in docs/migrating.md)
METHODS = {
    "binary": [("majority", "majority"), ("weighted", "weighted"), ("unanimous", "unanimous"), ("any", "any")],
    "ordinal": [
        ("mean", "mean"),
        ("median", "median"),
        ("weighted_mean", "weighted_mean"),
        ("majority", "mode"),
        ("unanimous", "min"),
        ("any", "max"),
    ],
    "nominal": [("majority", "mode"), ("weighted", "weighted_mode"), ("unanimous", "unanimous")],
}


def _their_vote(ar: Any, crit: Any, judge: str, label: str, weight: float) -> Any:
    from autorubric.types import CriterionVerdict, JudgeVote, MultiChoiceJudgeVote

    if crit.options is None:
        return JudgeVote(judge_id=judge, verdict=CriterionVerdict(label), reason="", weight=weight)
    i = next(k for k, o in enumerate(crit.options) if o.label == label)
    o = crit.options[i]
    return MultiChoiceJudgeVote(
        judge_id=judge, selected_index=i, selected_label=o.label, value=o.value, reason="", weight=weight, na=o.na
    )


@pytest.mark.parametrize("kind", ["binary", "ordinal", "nominal"])
@pytest.mark.parametrize("rules", ["autorubric", "defaults"])
def test_ensembles_equal_autorubric_under_its_vote_rules(kind: str, rules: str) -> None:
    """Under ``abstentions="drop", unanimous="abstain", snap="option"`` every aggregation equals
    autorubric's; under our defaults they differ, and only where docs/migrating.md's table says: a vote
    abstained, autorubric chose a label no judge voted (snapping), or a nominal unanimous vote split."""
    ar = pytest.importorskip("autorubric")
    from autorubric.graders import CriterionGrader

    rng = np.random.default_rng({"binary": 1, "ordinal": 2, "nominal": 3}[kind])
    judges = [f"j{k}" for k in range(5)]
    judge_w = {j: float(w) for j, w in zip(judges, rng.integers(1, 4, len(judges)), strict=True)}
    specs, rows = [], []
    for i in range(1500):
        spec = {"name": f"c{i}", "weight": float(rng.choice([-1, 1]) * rng.integers(1, 10)), "requirement": "r"}
        if kind != "binary":
            k = int(rng.integers(2, 5))
            values = sorted(np.round(rng.random(k), 1)) if rng.random() < 0.5 else np.round(rng.random(k), 1)
            spec["options"] = [{"label": f"o{m}", "value": float(v)} for m, v in enumerate(values)]
            spec["options"].append({"label": "n/a", "value": 0.0, "na": True})  # autorubric's auto NA option
            spec["scale_type"] = kind
        specs.append(spec)
        labels = ["MET", "UNMET", "CANNOT_ASSESS"] if kind == "binary" else [o["label"] for o in spec["options"]]
        p = (
            np.array([0.4, 0.4, 0.2])
            if kind == "binary"
            else np.r_[np.full(len(labels) - 1, 0.85 / (len(labels) - 1)), 0.15]
        )
        voters = judges[: int(rng.integers(1, 6))]
        rows += [(i, spec["name"], str(rng.choice(labels, p=p)), j) for j in voters]
    rubric = rt.Rubric.from_dict(specs)
    votes = pl.DataFrame(rows, schema=["id", "criterion", "verdict", "judge"], orient="row")
    their_crits = [ar.Criterion.model_validate(s) for s in specs]
    by_id = votes.partition_by("id", as_dict=True)
    differed = 0
    for ours, theirs in METHODS[kind]:
        peer_rules = {"abstentions": "drop", "unanimous": "abstain", "snap": "option"} if rules == "autorubric" else {}
        got = rt.ensemble(votes, rubric, method=ours, judge_weights=judge_w, **peer_rules)  # type: ignore[arg-type]
        got_labels = dict(zip(got["id"].to_list(), got["verdict"].to_list(), strict=True))
        grader = CriterionGrader(
            judge_model_config=ar.LLMConfig(model="openai/gpt-4.1-mini"),
            aggregation=theirs if kind == "binary" else "majority",
            ordinal_aggregation=theirs if kind == "ordinal" else "mean",
            nominal_aggregation=theirs if kind == "nominal" else "mode",
        )
        mismatches = []
        for i, crit in enumerate(their_crits):
            mine = by_id[(i,)]
            their_votes = [_their_vote(ar, crit, j, lab, judge_w[j]) for _, _, lab, j in mine.iter_rows()]
            if kind == "binary":
                want = grader._aggregate_votes(their_votes, crit.weight)[0].value  # private: pinned 1.6.1
            else:
                want = grader._aggregate_multi_choice_votes(their_votes, crit)[0].selected_label
            if got_labels[i] != want:
                mismatches.append((specs[i], mine["verdict"].to_list(), want, got_labels[i]))
        if rules == "autorubric":
            assert not mismatches, f"{ours}/{theirs}: {len(mismatches)} of {len(specs)} differ; first: {mismatches[0]}"
            continue
        differed += len(mismatches)
        unexplained = [
            m
            for m in mismatches
            if not (
                {"CANNOT_ASSESS", "n/a"} & set(m[1])  # an abstention was a vote
                or m[2] not in m[1]  # autorubric snapped to a label no judge gave
                or (ours == "unanimous" and len(set(m[1])) > 1)  # a split nominal vote abstained
            )
        ]
        assert not unexplained, f"{ours}/{theirs}: undocumented difference {unexplained[0]}"
    if rules == "defaults":
        assert differed > 50  # the documented differences are real on random votes

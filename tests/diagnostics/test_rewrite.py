"""`rt.improve` end to end through the loopback fake server, with scripted proposals."""

from __future__ import annotations

import gc
import json
import re

import polars as pl
import pytest

import rubrictools as rt

from ..fake_server import criterion_name, submission_text, user_text
from ..grading.test_grading import MODEL, SECRET, _reset, server  # noqa: F401 - module-scoped loopback server fixtures
from ..vega import walk

OPENERS = ["Sorry about that.", "Thanks for asking.", "Please note:", "Hello.", "Right."]


@pytest.fixture
def data():
    texts = [f"{OPENERS[i % 5]} Answer number {i} is here." for i in range(40)]
    df = pl.DataFrame({"id": [f"s{i:02d}" for i in range(40)], "submission": texts})
    polite = ["MET" if t.startswith(("Sorry", "Thanks")) else "UNMET" for t in texts]
    human = pl.concat(
        [pl.DataFrame({"id": df["id"], "criterion": "polite", "label": polite, "rater": r}) for r in ("ann", "bob")]
        + [pl.DataFrame({"id": df["id"], "criterion": "answers", "label": "MET", "rater": "ann"})]
    )
    rubric = rt.Rubric.from_dict(
        [
            {"name": "answers", "requirement": "Answers the question"},
            {"name": "polite", "requirement": "Is courteous and acknowledges the customer", "weight": 3},
        ]
    )
    return df, human, rubric


def make_script(proposals):
    def script(request):
        system = request["messages"][0]["content"]
        if "rubric editor" in system:
            assert "<example" in user_text(request) and "human verdicts" in user_text(request)
            return json.dumps({"requirement": proposals.pop(0), "rationale": "scripted"})
        name = criterion_name(request)
        req = re.search(r"^Requirement: (.+)$", user_text(request), re.M).group(1)
        sub = submission_text(request)
        phrases = re.findall(r"'([^']+)'", req)
        if name == "polite" and phrases:
            verdict = "MET" if any(p.lower() in sub.lower() for p in phrases) else "UNMET"
        elif name == "polite":
            verdict = "MET" if sub.startswith(("Please", "Sorry")) else "UNMET"  # half right
        else:
            verdict = "MET"
        return json.dumps({"verdict": verdict, "explanation": f"req={req[:20]}"})

    return script


def test_improve_keeps_a_helpful_rewrite_and_rejects_a_harmful_one(data, server, tmp_path, capsys):
    df, human, rubric = data
    server.script = make_script(["Opens with 'sorry' or 'thanks'", "Opens with 'please' or 'hello'"])
    res = rt.improve(
        df,
        human,
        rubric,
        model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET, backoff_base=0.01),
        rounds=2,
        criteria=None,
        cache=tmp_path / "c.sqlite",
        n_resamples=300,
        seed=1,
    )
    h = res.history
    assert h["round"].to_list() == [1, 2]
    assert h["criterion"].to_list() == ["polite", "polite"] or h["criterion"][0] == "polite"
    first = h.row(0, named=True)
    assert first["accepted"] and first["holdout_after"] == pytest.approx(1.0) and first["holdout_before"] < 0.6
    assert first["ci_low"] > 0 and first["p_value"] < 0.05 and first["calls"] == 40
    assert res.rubric["polite"].requirement == "Opens with 'sorry' or 'thanks'"
    assert res.rubric["answers"] == rubric["answers"] and res.initial == rubric
    out = capsys.readouterr().out
    assert "round 1: polite" in out and "kept" in out and "Cohen's kappa" in out and "95% CI" in out
    # the final verdicts are those of the improved rubric, in input order
    v = res.verdicts
    assert v.select("id", "criterion").rows() == [(i, n) for i in df["id"] for n in rubric.names]
    kappa = rt.agreement(v, human, res.rubric, metrics=["cohen_kappa"], n_resamples=0, level="criterion")
    assert kappa.filter(pl.col("criterion") == "polite")["value"].item() == pytest.approx(1.0)
    # the proposer and the judge calls went through the loopback server; no key in the history
    assert any("rubric editor" in r["messages"][0]["content"] for r in server.requests)
    assert SECRET not in repr(res) and SECRET not in h.write_json()
    assert res.split["split"].value_counts().sort("split")["count"].to_list() == [12, 28]
    # the proposer's calls (direct transport, from sync code) leave no HTTP session open
    aiohttp = pytest.importorskip("aiohttp")
    assert not [o for o in gc.get_objects() if isinstance(o, aiohttp.ClientSession) and not o.closed]


def test_rejected_rewrite_leaves_the_rubric_unchanged(data, server, tmp_path):
    df, human, rubric = data
    server.script = make_script(["Opens with 'please' or 'hello'"])
    res = rt.improve(
        df,
        human,
        rubric,
        model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET, backoff_base=0.01),
        rounds=1,
        criteria=["polite"],
        cache=tmp_path / "c.sqlite",
        n_resamples=0,
        verbose=False,
    )
    assert not res.history["accepted"][0] and res.rubric == rubric
    assert res.history["ci_low"][0] is None  # no bootstrap asked


def test_function_proposer_and_scripted_judge(data):
    df, human, rubric = data
    seen = []

    def proposer(criterion, examples):
        seen.append(examples)
        return {"requirement": "Opens with 'sorry' or 'thanks'", "rationale": "humans reward apologies and thanks"}

    def rule(text, c):
        phrases = re.findall(r"'([^']+)'", c.requirement)
        if phrases:
            return "MET" if any(p in text.lower() for p in phrases) else "UNMET"
        return "MET" if text.startswith(("Please", "Sorry")) or c.name == "answers" else "UNMET"

    res = rt.improve(
        df,
        human,
        rubric,
        model=rt.ScriptedJudge(rule=rule),
        proposer=proposer,
        rounds=1,
        n_resamples=200,
        cache=False,
        verbose=False,
    )
    ex = seen[0]
    assert ex.columns == ["id", "text", "judge_verdict", "human_labels", "explanation"]
    assert ex.height == 6 and set(ex["id"]).isdisjoint(set(res.split.filter(pl.col("split") == "holdout")["id"]))
    assert res.history["accepted"][0]
    spec = res.chart().to_dict()
    assert spec["layer"][0]["mark"]["type"] == "rule"
    rows = [r for n in walk(spec) if isinstance(n.get("values"), list) for r in n["values"] if isinstance(r, dict)]
    outcomes = {str(r.get("outcome")) for r in rows} | {
        str(r.get("outcome")) for d in spec.get("datasets", {}).values() for r in d
    }
    domains = [
        n["color"]["scale"]["domain"] for n in walk(spec) if isinstance(n.get("color"), dict) and "scale" in n["color"]
    ]
    assert domains and all(set(d) <= outcomes for d in domains)  # before: "rejected" listed when nothing was
    legends = [n["color"]["legend"] for n in walk(spec) if isinstance(n.get("color"), dict) and "legend" in n["color"]]
    assert legends and all(g["symbolOpacity"] == 1 for g in legends)  # before: a paler swatch than the filled point


def test_bad_arguments(data):
    df, human, rubric = data
    judge = rt.ScriptedJudge(rule=lambda t, c: "MET")
    with pytest.raises(ValueError, match="cannot propose rewrites"):
        rt.improve(df, human, rubric, model=judge, cache=False)
    with pytest.raises(ValueError, match="holdout"):
        rt.improve(df, human, rubric, model=judge, proposer=lambda c, e: "x", holdout=1.5, cache=False)
    with pytest.raises(ValueError, match=r"criteria: \['nope'\]"):
        rt.improve(df, human, rubric, model=judge, proposer=lambda c, e: "x", criteria=["nope"], cache=False)
    with pytest.raises(TypeError, match="mode"):  # improve grades per criterion: no mode to choose
        rt.improve(df, human, rubric, model=judge, proposer=lambda c, e: "x", mode="per_item", cache=False)
    with pytest.raises(ValueError, match="at least 4 submissions"):
        rt.improve(df, human.head(2), rubric, model=judge, proposer=lambda c, e: "x", cache=False)

"""Rule criteria, evidence checks and numeric scales through `grade` (fake server and scripted judge)."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

import rubrictools as rt

from ..fake_server import criterion_name, judge_from, submission_text
from .test_grading import MODEL, SECRET, _reset, server  # noqa: F401 - module-scoped loopback server fixtures


@pytest.fixture
def df():
    return pl.DataFrame(
        {
            "id": [1, 2, 3],
            "text": [
                "The capital is Paris.  Source: Britannica, 2024.",
                "As an AI, I believe it is Lyon.",
                '{"answer": "Paris"}',
            ],
        }
    )


@pytest.fixture
def rubric():
    return rt.Rubric.from_dict(
        [
            {"name": "cites", "requirement": "Cites a source", "evidence": True},
            {"name": "clarity", "requirement": "How clear", "range": {"min": 0, "max": 4, "step": 1}},
            {"name": "short", "rule": {"max_words": 8}},
            {"name": "ai_talk", "rule": {"regex": r"\bas an ai\b", "flags": "i"}, "disqualifier": True},
        ]
    )


def script(request):
    """Cites: MET with a quote (exact, whitespace-changed, or invented); clarity: a number."""
    name = criterion_name(request)
    sub = submission_text(request)
    if name == "cites":
        quote = {"The": "Source:   Britannica,\n2024", "As ": "Source: Wikipedia", '{"a': ""}[sub[:3]]
        verdict = "MET" if quote or sub.startswith("{") else "UNMET"
        return json.dumps({"verdict": verdict, "explanation": "x", "evidence": quote})
    if name == "clarity":
        return json.dumps({"verdict": 3 if "Paris" in sub else "1.0", "explanation": "y"})
    raise AssertionError(f"rule criterion {name!r} must never reach the judge")


def run(df, rubric, server, tmp_path, **kw):
    kw = judge_from({"model": MODEL, **kw}, api_base=server.url, api_key=SECRET, backoff_base=0.01)
    return rt.grade(df, rubric, column="text", id_column="id", cache=tmp_path / "c.sqlite", progress=False, **kw)


def test_rules_never_call_the_judge_and_evidence_is_verified(df, rubric, server, tmp_path):
    server.script = script
    v = run(df, rubric, server, tmp_path)
    assert server.hits == 6  # 3 submissions x 2 judge-decided criteria; the 2 rules made no call
    assert v.select("id", "criterion").rows() == [(i, n) for i in (1, 2, 3) for n in rubric.names]
    rules = v.filter(pl.col("judge") == "rule")
    assert rules.select("criterion", "verdict").rows() == [
        ("short", "MET"),
        ("ai_talk", "UNMET"),
        ("short", "MET"),
        ("ai_talk", "MET"),
        ("short", "MET"),
        ("ai_talk", "UNMET"),
    ]
    assert rules["prompt_tokens"].sum() == 0 and not rules["cached"].any()
    cites = v.filter(pl.col("criterion") == "cites")
    # a whitespace-normalised quote is accepted, an invented one is flagged, an empty one on MET is unsupported
    assert cites["evidence_ok"].to_list() == [True, False, False]
    assert cites["verdict"].to_list() == ["MET", "MET", "MET"]  # flagged, not changed
    assert v.filter(pl.col("criterion") == "clarity")["verdict"].to_list() == ["3", "1", "3"]
    assert v.filter(pl.col("criterion") != "cites")["evidence_ok"].null_count() == 9
    # the evidence was asked for in the prompt, and only for the criterion that wants it
    asked = [r for r in server.requests if criterion_name(r) == "cites"]
    assert all('"evidence"' in r["messages"][1]["content"] for r in asked)
    assert all(
        "evidence" not in json.dumps(r.get("response_format", {}))
        for r in server.requests
        if criterion_name(r) == "clarity"
    )
    s = rt.score(v, rubric)
    assert s["disqualified"].to_list() == [None, "capped at 0.0 by ai_talk", None]
    assert s["score"][1] == 0.0


def test_downgrade_turns_unsupported_claims_into_the_lowest_label(df, rubric, server, tmp_path):
    server.script = script
    v = run(df, rubric, server, tmp_path, on_unsupported="downgrade")
    cites = v.filter(pl.col("criterion") == "cites")
    assert cites["verdict"].to_list() == ["MET", "UNMET", "UNMET"]
    assert cites["value"].to_list() == [1.0, 0.0, 0.0]
    assert cites["explanation"][1].startswith("[downgraded from MET")
    with pytest.raises(ValueError, match="on_unsupported"):
        run(df, rubric, server, tmp_path, on_unsupported="drop")


def test_evidence_for_every_criterion_in_per_item_mode(df, rubric, server, tmp_path):
    def item(request):
        assert "EVERY criterion" in request["messages"][0]["content"]
        names = re.findall(r"^Criterion name: (.+)$", request["messages"][1]["content"], re.M)
        assert names == ["cites", "clarity"]  # rule criteria are not in the prompt
        sub = submission_text(request)
        return json.dumps(
            {
                "verdicts": [
                    {"criterion": "cites", "verdict": "MET", "explanation": "a", "evidence": sub.split(".")[0]},
                    {"criterion": "clarity", "verdict": 2, "explanation": "b", "evidence": "not in the text"},
                ]
            }
        )

    server.script = item
    v = run(df, rubric, server, tmp_path, mode="per_item", evidence=True)
    assert server.hits == 3
    assert v.filter(pl.col("criterion") == "cites")["evidence_ok"].to_list() == [True, True, True]
    assert v.filter(pl.col("criterion") == "clarity")["evidence_ok"].to_list() == [False] * 3
    assert v.filter(pl.col("judge") == "rule").height == 6


def test_evidence_false_overrides_criterion_settings(df, rubric, server, tmp_path):
    server.script = script
    v = run(df, rubric, server, tmp_path, evidence=False)
    assert "evidence_ok" not in v.columns
    assert not any('"evidence"' in r["messages"][1]["content"] for r in server.requests)


def test_holistic_mode_refuses_rule_criteria(df, rubric, server, tmp_path):
    with pytest.raises(ValueError, match="rule criteria"):
        run(df, rubric, server, tmp_path, mode="holistic")


def test_numeric_reply_outside_the_scale_is_retried_then_an_error_row(df, server, tmp_path):
    r = rt.Rubric.from_dict([{"name": "clarity", "requirement": "How clear", "range": {"min": 0, "max": 4, "step": 1}}])
    server.script = lambda req: json.dumps({"verdict": 7, "explanation": "z"})
    v = run(df.head(1), r, server, tmp_path, max_retries=1)
    assert v["error"][0].startswith("parse") and "0 to 4" in v["error"][0]
    assert server.hits == 2


def test_ensembles_share_rule_rows_and_score_uses_them(df, rubric):
    a = rt.ScriptedJudge(rule=lambda t, c: ("MET", "a", t[:10]) if c.name == "cites" else "2", name="a")
    b = rt.ScriptedJudge(rule=lambda t, c: ("UNMET", "b") if c.name == "cites" else "4", name="b")
    v = rt.grade(df, rubric, model=[a, b], column="text", id_column="id", progress=False, aggregate="any")
    assert v.filter(pl.col("judge") == "rule").height == 6
    assert v.filter(pl.col("criterion") == "short").height == 3  # not duplicated per judge
    s = rt.score(v, rubric)
    assert s["score"].to_list()[0] == pytest.approx((10 + 10 + 10) / 30)
    assert rt.score(v, rubric, judge="b")["score"].to_list()[0] == pytest.approx((0 + 10 + 10) / 30)


def test_per_item_rubrics_with_rules(df):
    strict = rt.Rubric.from_dict([{"name": "short", "rule": {"max_words": 3}}])
    loose = rt.Rubric.from_dict([{"name": "short", "rule": {"max_words": 30}}, {"name": "ok", "requirement": "fine"}])
    frame = df.with_columns(pl.Series("rubric", [strict, loose, strict], dtype=pl.Object))
    v = rt.grade(
        frame,
        model=rt.ScriptedJudge(rule=lambda t, c: "MET"),
        column="text",
        id_column="id",
        rubric_column="rubric",
        progress=False,
    )
    assert v.select("id", "criterion", "verdict", "judge").rows() == [
        (1, "short", "UNMET", "rule"),
        (2, "short", "MET", "rule"),
        (2, "ok", "MET", "scripted"),
        (3, "short", "MET", "rule"),
    ]


def test_a_rubric_file_path_is_accepted_and_other_text_says_how_to_load_it(tmp_path):
    path = tmp_path / "rubric.yaml"
    path.write_text("- name: greets\n  requirement: Says hello\n")
    df = pl.DataFrame({"submission": ["hello there", "bye"]})
    judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "hello" in text else "UNMET")
    for given in (path, str(path)):
        v = rt.grade(df, given, model=judge, cache=False, progress=False)
        assert v["verdict"].to_list() == ["MET", "UNMET"]
    with pytest.raises(ValueError, match=r"rt\.Rubric\.from_yaml"):
        rt.grade(df, "- name: greets", model=judge, cache=False, progress=False)
    with pytest.raises(FileNotFoundError, match="rubric file not found"):
        rt.grade(df, str(tmp_path / "missing.json"), model=judge, cache=False, progress=False)


@pytest.mark.parametrize("mode", ["per_criterion", "per_item", "holistic"])
def test_on_null_error_row_grades_the_rest_and_makes_no_call_for_the_null(server, tmp_path, mode):
    criteria = [{"name": "good", "requirement": "The answer is good"}]
    if mode != "holistic":  # holistic grading refuses rule criteria
        criteria.append({"name": "long", "requirement": "At least 3 characters", "rule": {"min_chars": 3}})
    rubric = rt.Rubric.from_dict(criteria)
    df = pl.DataFrame({"id": [1, 2, 3], "submission": ["good one", None, "bad"]})
    with pytest.raises(ValueError, match=r"row 1 \(id 2\): submission is null \(or pass on_null='error_row'"):
        rt.grade(
            df, rubric, id_column="id", model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET), cache=False
        )
    assert server.hits == 0  # refused before any call
    v = rt.grade(
        df,
        rubric,
        id_column="id",
        model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET),
        cache=False,
        progress=False,
        on_null="error_row",
        mode=mode,
    )
    null = v.filter(pl.col("id") == 2)
    assert null.height >= 1 and null["verdict"].null_count() == null.height
    assert null["error"].str.contains("submission is null").all()
    assert v.filter(pl.col("id") != 2)["error"].null_count() == v.filter(pl.col("id") != 2).height
    sent = {submission_text(r) for r in server.requests}
    assert "" not in sent and len(sent) == 2  # rows 1 and 3 only
    assert rt.score(v, rubric).filter(pl.col("id") == 2)["score"].is_null().all()


@pytest.mark.parametrize("said, score, raw", [(80, 0.8, -1.0), (100, 1.0, 0.0), (0, 0.0, -5.0)])
def test_holistic_scores_of_a_penalty_only_rubric_follow_the_judge(server, tmp_path, said, score, raw):
    # issue 21: weights [-2, -3] gave 0.0 whatever the judge said
    rubric = rt.Rubric.from_dict(
        [
            {"name": "rude", "weight": -2, "requirement": "Is rude"},
            {"name": "wrong", "weight": -3, "requirement": "Is wrong"},
        ]
    )
    server.script = lambda body: json.dumps({"score": said, "explanation": "x"})
    v = rt.grade(
        pl.DataFrame({"submission": ["an answer"]}),
        rubric,
        model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET),
        cache=False,
        progress=False,
        mode="holistic",
    )
    s = rt.score(v, rubric)
    assert s["score"].item() == pytest.approx(score) and s["raw_score"].item() == pytest.approx(raw)

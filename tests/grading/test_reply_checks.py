"""Confidence, output constraints, warnings and the per-call callback."""

from __future__ import annotations

import json
import re
import warnings

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.testing import FakeLLMServer, criterion_name, submission_text, user_text

from .test_grading import MODEL, SECRET

RUBRIC = rt.Rubric.from_dict([{"name": "a", "requirement": "Is polite"}, {"name": "b", "requirement": "Is brief"}])
DF = pl.DataFrame({"submission": ["Thanks, that is kind.", "No."]})


def script(request):
    """Per criterion: 'a' answers with a BECAUSE: explanation and a confidence; 'b' breaks both."""
    sub = submission_text(request)
    if criterion_name(request) == "a":
        why = "BECAUSE: the reply thanks the reader politely"
        return json.dumps({"verdict": "MET" if "Thanks" in sub else "UNMET", "explanation": why, "confidence": 0.8})
    return json.dumps({"verdict": "MET", "explanation": "short", "confidence": 7})


def _grade(srv, **kw):
    return rt.grade(
        DF,
        RUBRIC,
        model=rt.Judge(model=MODEL, api_base=srv.url, api_key=SECRET),
        progress=False,
        record=False,
        cache=False,
        **kw,
    )


def test_confidence_is_asked_in_the_schema_and_read_from_the_reply() -> None:
    with FakeLLMServer(script=script) as srv:
        v = _grade(srv, confidence=True)
        body = srv.requests[0]
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["confidence"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert "confidence" in schema["required"] and 'also holds a "confidence" field' in body["messages"][1]["content"]
    a, b = v.filter(pl.col("criterion") == "a"), v.filter(pl.col("criterion") == "b")
    assert a["confidence"].to_list() == [0.8, 0.8] and a["warnings"].to_list() == [[], []]
    assert b["confidence"].null_count() == 2  # 7 is not a probability: kept as a warning, not a verdict error
    assert b["warnings"].to_list() == [["confidence: the reply gave none from 0 to 1"]] * 2
    assert b["verdict"].to_list() == ["MET", "MET"]


def test_soft_and_hard_constraints_warn_or_make_error_rows_and_are_told_to_the_judge() -> None:
    cons = [
        rt.OutputConstraint(id="because", kind="prefix_suffix", prefix="BECAUSE:", enforcement="hard"),
        {"id": "long", "kind": "word_count", "min": 5},
        {"id": "no_maybe", "kind": "token", "token": "maybe", "forbid": True},
    ]
    with FakeLLMServer(script=script) as srv:
        v = _grade(srv, output_constraints=cons)
        system = srv.requests[0]["messages"][0]["content"]
    assert system.endswith(
        "Constraints on your reply (they apply to every verdict you give):\n- the explanation must start with "
        '"BECAUSE:"\n- the explanation must have at least 5 words\n- the explanation must not contain "maybe"'
    )
    a, b = v.filter(pl.col("criterion") == "a"), v.filter(pl.col("criterion") == "b")
    assert a["verdict"].to_list() == ["MET", "UNMET"] and a["warnings"].to_list() == [[], []]
    assert a["raw_response"].null_count() == 2  # answered rows keep no reply, as without constraints
    assert b["verdict"].null_count() == 2 and b["error_kind"].to_list() == ["constraint"] * 2
    assert b["error"][0] == 'constraint because: the explanation must start with "BECAUSE:"'
    assert json.loads(b["raw_response"][0])["explanation"] == "short"  # the answer is kept
    assert b["warnings"].null_count() == 2  # an error row has no warnings of its own
    s = rt.score(v, RUBRIC)
    assert s["score"].null_count() == 2 and "b" in s["error"][0]


def test_constraint_checks_equal_a_plain_loop() -> None:
    texts = ["", "one", "one two three", "BECAUSE: yes\n- item\n- item", "  padded. ", "x" * 30]
    cons = [
        rt.OutputConstraint(id="w", kind="word_count", min=2, max=3),
        rt.OutputConstraint(id="c", kind="char_limit", max=10),
        rt.OutputConstraint(id="i", kind="item_count", min=2),
        rt.OutputConstraint(id="p", kind="prefix_suffix", prefix="BECAUSE:", suffix="item"),
        rt.OutputConstraint(id="t", kind="token", token="one"),
    ]
    frame = pl.DataFrame({"explanation": texts})
    got = frame.select([c.broken().alias(c.id) for c in cons])

    def loop(c, t):
        t = t.strip()
        n = {"w": len(t.split()), "c": len(t), "i": sum(1 for line in t.splitlines() if line.strip())}.get(c.id)
        if n is not None:
            return (c.min is not None and n < c.min) or (c.max is not None and n > c.max)
        if c.id == "p":
            return not (t.startswith("BECAUSE:") and t.endswith("item"))
        return "one" not in t

    for c in cons:
        assert got[c.id].to_list() == [loop(c, t) for t in texts], c.id
    with pytest.raises(ValueError, match="a word_count constraint takes"):
        rt.OutputConstraint(id="x", kind="word_count", token="a")
    with pytest.raises(ValueError, match="min \\(5\\) is above max \\(2\\)"):
        rt.OutputConstraint(id="x", kind="char_limit", min=5, max=2)
    with pytest.raises(ValueError, match="duplicate ids \\['x'\\]"):
        rt.grade(DF, RUBRIC, model=rt.ScriptedJudge(), output_constraints=[cons[0].model_copy(update={"id": "x"})] * 2)


def test_on_result_reports_every_call_once_including_cache_hits(tmp_path) -> None:
    seen: list[dict] = []
    with FakeLLMServer(script=script) as srv:
        kw = {"model": rt.Judge(model=MODEL, api_base=srv.url, api_key=SECRET), "progress": False, "record": False}
        kw["cache"] = tmp_path / "c.db"
        first = rt.grade(DF, RUBRIC, on_result=seen.extend, **kw)
        assert len(seen) == 4 and {r["id"] for r in seen} == {0, 1}
        seen.clear()
        rt.grade(DF, RUBRIC, on_result=seen.extend, **kw)  # every answer from the cache
        assert len(srv.requests) == 4
    assert sorted((r["id"], r["criterion"], r["verdict"]) for r in seen) == sorted(
        first.select("id", "criterion", "verdict").rows()
    )
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        v = rt.grade(DF, RUBRIC, model=rt.ScriptedJudge(), on_result=lambda rows: 1 / 0, progress=False, record=False)
    assert v.height == 4 and sum("on_result raised ZeroDivisionError" in str(x.message) for x in w) == 1


def test_on_start_says_what_each_sent_call_will_ask_and_never_for_a_cache_hit(tmp_path) -> None:
    """rubrify's on_criterion_start: before each call, with the criteria and the exact messages."""
    started: list[dict] = []
    with FakeLLMServer(script=script) as srv:
        kw = {"model": rt.Judge(model=MODEL, api_base=srv.url, api_key=SECRET), "progress": False, "record": False}
        kw["cache"] = tmp_path / "c.db"
        rt.grade(DF, RUBRIC, on_start=started.append, **kw)
        sent = [r["messages"] for r in srv.requests]
        assert sorted((s["id"], tuple(s["criteria"])) for s in started) == [
            (0, ("a",)),
            (0, ("b",)),
            (1, ("a",)),
            (1, ("b",)),
        ]
        assert sorted(map(str, (s["messages"] for s in started))) == sorted(map(str, sent))
        assert all(SECRET not in str(s) for s in started)
        started.clear()
        rt.grade(DF, RUBRIC, on_start=started.append, **kw)  # every answer from the cache: nothing starts
        assert started == [] and len(srv.requests) == 4
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        v = rt.grade(DF, RUBRIC, model=rt.ScriptedJudge(), on_start=lambda c: 1 / 0, progress=False, record=False)
    assert v.height == 4 and sum("on_start raised ZeroDivisionError" in str(x.message) for x in w) == 1
    with pytest.raises(TypeError, match=r"on_start must take one argument"):
        rt.grade(DF, RUBRIC, model=rt.ScriptedJudge(), on_start=lambda: None)
    with pytest.raises(TypeError, match=r"on_result must take one argument"):
        rt.grade_to_parquet(DF, RUBRIC, output=tmp_path / "o", model=rt.ScriptedJudge(), on_result=lambda a, b: None)
    with pytest.raises(TypeError, match="on_start must be a function"):
        rt.grade(DF, RUBRIC, model=rt.ScriptedJudge(), on_start="print")  # type: ignore[arg-type]  # reason: the bad input under test


def test_on_result_reports_the_calls_of_a_stream_of_parts(tmp_path) -> None:
    seen: list[dict] = []
    df = pl.DataFrame({"submission": [f"answer {i}" for i in range(5)]})
    lf = rt.grade_to_parquet(df, RUBRIC, output=tmp_path / "out", batch_size=2, model=rt.ScriptedJudge(),
                             on_result=seen.extend, progress=False)  # fmt: skip
    assert sorted((r["id"], r["criterion"]) for r in seen) == sorted(lf.collect().select("id", "criterion").rows())


def test_a_constraint_on_the_evidence_applies_where_a_quote_was_asked() -> None:
    rubric = rt.Rubric.from_dict(
        [{"name": "a", "requirement": "x", "evidence": True}, {"name": "b", "requirement": "y"}]
    )
    judge = rt.ScriptedJudge(rule=lambda text, c: ("MET", "because", "a quote"))
    quote = rt.OutputConstraint(id="q", kind="word_count", min=5, target="evidence")
    v = rt.grade(DF.head(1), rubric, model=judge, output_constraints=[quote], progress=False, record=False)
    assert v.filter(pl.col("criterion") == "a")["warnings"].to_list() == [
        [
            "constraint q: the evidence must have at least 5 words",
            "evidence: the quoted passage is not in the submission",
        ]
    ]
    assert v.filter(pl.col("criterion") == "b")["warnings"].to_list() == [[]]  # no quote asked: nothing to check
    with pytest.raises(ValueError, match=r"output_constraints \['q'\] check the evidence quote"):
        rt.grade(DF.head(1), RUBRIC, model=judge, output_constraints=[quote], progress=False, record=False)


GROUPED = rt.Rubric.from_dict(
    {
        "criteria": [
            {"name": "a", "requirement": "Is polite", "group": "tone"},
            {"name": "b", "requirement": "Is warm", "group": "tone"},
            {"name": "c", "requirement": "Is brief"},
        ],
        "thresholds": [{"label": "good", "min": 0.5}, {"label": "poor", "min": 0.0}],
        "disqualified_decision": "Rejected",
    }
)


def four_words(request):
    """Each criterion's explanation has four words of its own; an answer with 'sorry' apologises in it."""
    sub = submission_text(request)
    crits = re.findall(r"^Criterion name: (.+)$", user_text(request), re.M)
    why = {c: f"BECAUSE: criterion {c} {'sorry' if 'sorry' in sub else 'holds'}" for c in crits}
    if len(crits) == 1:
        return json.dumps({"verdict": "MET", "explanation": why[crits[0]]})
    return json.dumps({"verdicts": [{"criterion": c, "verdict": "MET", "explanation": why[c]} for c in crits]})


def _warned(v: pl.DataFrame) -> dict[tuple[int, str], bool]:
    return {(r["id"], r["criterion"]): bool(r["warnings"]) for r in v.iter_rows(named=True)}


def test_a_disqualifying_constraint_keeps_the_verdict_and_caps_the_score_at_zero() -> None:
    df = pl.DataFrame({"id": [1, 2], "submission": ["All fine.", "I am sorry."]})
    no_sorry = rt.OutputConstraint(id="no_sorry", kind="token", token="sorry", forbid=True, enforcement="disqualify")
    with FakeLLMServer(script=four_words) as srv:
        v = _grade_df(srv, df, GROUPED, output_constraints=[no_sorry])
    assert v["verdict"].to_list() == ["MET"] * 6 and v["error"].null_count() == 6  # nothing thrown away
    assert v.filter(pl.col("id") == 1)["disqualified_by"].null_count() == 3
    assert set(v.filter(pl.col("id") == 2)["disqualified_by"]) == {
        'constraint no_sorry: the explanation must not contain "sorry"'
    }
    s = rt.score(v, GROUPED)
    assert s["score"].to_list() == [1.0, 0.0] and s["raw_score"].to_list() == [30.0, 30.0]
    assert s["decision"].to_list() == ["good", "Rejected"]
    assert s["disqualified"][1] == 'capped at 0.0 by constraint no_sorry: the explanation must not contain "sorry"'
    assert "disqualified_by" not in _grade_plain(df).columns  # the column comes with a disqualifying constraint


def test_scopes_check_a_row_a_call_or_the_whole_judgment_once() -> None:
    df = pl.DataFrame({"id": [1], "submission": ["All fine."]})
    at_most = {"id": "short", "kind": "word_count", "max": 6}
    with FakeLLMServer(script=four_words) as srv:
        by_row = _grade_df(srv, df, GROUPED, output_constraints=[at_most], mode="grouped")
        by_call = _grade_df(srv, df, GROUPED, output_constraints=[{**at_most, "scope": "call"}], mode="grouped")
        whole = _grade_df(srv, df, GROUPED, output_constraints=[{**at_most, "scope": "judgment"}], mode="grouped")
        system = srv.requests[-1]["messages"][0]["content"]
    assert set(_warned(by_row).values()) == {False}  # four words each
    assert _warned(by_call) == {(1, "a"): True, (1, "b"): True, (1, "c"): False}  # a and b shared one call: 8 words
    assert set(_warned(whole).values()) == {True}  # 12 words in all
    assert whole["warnings"][0].to_list() == [
        "constraint short: the explanation must have at most 6 words (over all verdicts on the submission)"
    ]
    assert "at most 6 words (over all your verdicts on the submission together)" in system


def test_an_ensemble_row_carries_a_judge_s_disqualifying_reply() -> None:
    df = pl.DataFrame({"id": [1], "submission": ["fine"]})
    polite = rt.ScriptedJudge(rule=lambda text, c: ("MET", "BECAUSE: it is fine"), name="polite")
    sorry = rt.ScriptedJudge(rule=lambda text, c: ("MET", "sorry, it is fine"), name="sorry")
    no_sorry = {"id": "no_sorry", "kind": "token", "token": "sorry", "forbid": True, "enforcement": "disqualify"}
    v = rt.grade(df, RUBRIC, model=[polite, sorry], output_constraints=[no_sorry], progress=False, record=False)
    ensemble = v.filter(pl.col("judge") == "ensemble")
    assert ensemble["disqualified_by"].str.starts_with("sorry: constraint no_sorry").all()
    assert rt.score(v, RUBRIC)["score"].to_list() == [0.0]


def _grade_df(srv, df, rubric, **kw):
    judge = rt.Judge(model=MODEL, api_base=srv.url, api_key=SECRET)
    return rt.grade(df, rubric, model=judge, id_column="id", progress=False, record=False, cache=False, **kw)


def _grade_plain(df):
    return rt.grade(df, GROUPED, model=rt.ScriptedJudge(), id_column="id", progress=False, record=False)


def test_bad_constraint_inputs_are_refused_naming_the_field() -> None:
    ok = {"id": "short", "kind": "word_count", "max": 5}
    cases = [
        ({**ok, "scoep": "call"}, r"output_constraints\[0\] field 'scoep'"),
        ({**ok, "scope": "turn"}, r"output_constraints\[0\] field 'scope'"),
        ({**ok, "max": True}, r"field 'max': .*whole number"),
        ({**ok, "id": "  "}, r"field 'id'"),
        ({"id": "p", "kind": "prefix_suffix", "prefix": " BECAUSE"}, "a prefix may not start"),
    ]
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            rt.grade(DF, RUBRIC, model=rt.ScriptedJudge(), output_constraints=[bad], progress=False, record=False)
    with pytest.raises(TypeError, match="output_constraints must be a list"):
        rt.grade(DF, RUBRIC, model=rt.ScriptedJudge(), output_constraints=5, progress=False, record=False)
    spec = {"criteria": [{"id": "C1", "title": "Clear"}]}
    with pytest.raises(ValueError, match="count and max are both given"):
        rt.Rubric.from_rubrify({**spec, "output_constraints": [{**ok, "count": 3, "mode": "max"}]})
    with pytest.raises(ValueError, match="mode 'min' needs a count"):
        no_count = {"id": "x", "kind": "word_count", "min": 2, "mode": "min"}
        rt.Rubric.from_rubrify({**spec, "output_constraints": [no_count]})
    with pytest.raises(ValueError, match=r"output_constraints\[0\] must be a mapping"):
        rt.Rubric.from_rubrify({**spec, "output_constraints": ["short"]})
    one = rt.Rubric.from_rubrify({**spec, "output_constraints": {**ok, "enforcement": "disqualify"}})  # one mapping
    assert one.output_constraints[0].enforcement == "disqualify" and one.disqualified_decision == "Rejected"
    assert rt.OutputConstraint.from_rubrify({"id": "w", "kind": "word_count", "count": 1}).render() == (
        "the explanation must have at most 1 word"
    )


def test_the_judge_is_told_the_rule_checked_and_a_description_beside_it() -> None:
    c = rt.OutputConstraint(id="short", kind="word_count", max=50, description="keep it brief")
    assert c.render() == "the explanation must have at most 50 words (keep it brief)"


def test_a_reply_breaking_a_hard_and_a_disqualifying_rule_stays_disqualified() -> None:
    df = pl.DataFrame({"id": [1], "submission": ["fine"]})
    judge = rt.ScriptedJudge(rule=lambda text, c: ("MET", "sorry" if c.name == "a" else "BECAUSE it is fine"))
    rules = [
        {"id": "no_sorry", "kind": "token", "token": "sorry", "forbid": True, "enforcement": "disqualify"},
        {"id": "because", "kind": "prefix_suffix", "prefix": "BECAUSE", "enforcement": "hard"},
    ]
    v = rt.grade(df, RUBRIC, model=judge, id_column="id", output_constraints=rules, progress=False, record=False)
    assert v["error_kind"].to_list() == ["constraint", None] and v["disqualified_by"].to_list()[1] is None
    assert v["disqualified_by"][0].startswith("constraint no_sorry")  # kept on the error row
    assert rt.score(v, RUBRIC, on_error="skip")["score"].to_list() == [0.0]  # not 1.0


def test_score_reads_disqualified_by_strictly_and_warns_when_nothing_checked_the_rubric_s_rules() -> None:
    rubric = rt.Rubric.from_dict(
        {
            "criteria": [{"name": "a", "requirement": "Is polite"}],
            "output_constraints": [{"id": "x", "kind": "token", "token": "z", "enforcement": "disqualify"}],
        }
    )
    v = pl.DataFrame({"id": [1, 2], "criterion": "a", "verdict": "MET"})
    with pytest.warns(UserWarning, match=r"disqualifying output constraints \['x'\] were not checked"):
        rt.score(v, rubric)
    assert rt.score(v.with_columns(pl.Series("disqualified_by", ["", None])), rubric)["score"].to_list() == [1.0, 1.0]
    with pytest.raises(ValueError, match="'disqualified_by' must hold text"):
        rt.score(v.with_columns(pl.lit(False).alias("disqualified_by")), rubric)


def test_the_judgment_scope_counts_a_text_repeated_in_separate_calls_each_time() -> None:
    df = pl.DataFrame({"id": [1], "submission": ["fine"]})
    same = rt.ScriptedJudge(rule=lambda text, c: ("MET", "one two three"))  # per criterion: two calls, same text
    rule = {"id": "short", "kind": "word_count", "max": 4, "scope": "judgment"}
    v = rt.grade(df, RUBRIC, model=same, id_column="id", output_constraints=[rule], progress=False, record=False)
    assert v["warnings"].list.len().to_list() == [1, 1]  # 6 words over the judgment, not 3


def test_a_disqualified_submission_scores_zero_even_when_its_rows_failed() -> None:
    v = pl.DataFrame(
        {
            "id": [1, 1],
            "criterion": ["a", "b"],
            "verdict": [None, None],
            "error": ["constraint x: broken", "timeout"],
            "disqualified_by": ["constraint no_sorry: ...", None],
        }
    )
    s = rt.score(v, RUBRIC)
    assert s["score"].to_list() == [0.0] and s["disqualified"][0].startswith("capped at 0.0 by constraint no_sorry")


def test_per_row_rubrics_with_different_constraints_are_refused_and_sets_are_not_lists() -> None:
    quiet = RUBRIC.to_dict()
    strict = {"criteria": quiet, "output_constraints": [{"id": "s", "kind": "token", "token": "z", "forbid": True}]}
    df = pl.DataFrame({"submission": ["a", "b"], "rubric": [json.dumps(quiet), json.dumps(strict)]})
    with pytest.raises(ValueError, match="carry different output constraints"):
        rt.grade(df, None, model=rt.ScriptedJudge(), rubric_column="rubric", progress=False, record=False)
    rule = rt.OutputConstraint(id="s", kind="token", token="z")
    with pytest.raises(TypeError, match=r"must be a list .* got a set"):
        rt.grade(DF, RUBRIC, model=rt.ScriptedJudge(), output_constraints={rule}, progress=False, record=False)
    with pytest.raises(TypeError, match="must be a mapping"):
        rt.OutputConstraint.from_rubrify(None)
    with pytest.raises(ValueError, match="field 'enforcement': expected text"):
        rt.OutputConstraint.from_rubrify({"id": "x", "kind": "token", "token": "z", "enforcement": ["hard"]})


def test_streaming_refuses_before_writing_anything_and_new_constraints_are_new_settings(tmp_path) -> None:
    src = tmp_path / "in.parquet"
    DF.write_parquet(src)
    out = tmp_path / "parts"
    on_evidence = {"id": "q", "kind": "word_count", "max": 3, "target": "evidence"}
    with pytest.raises(ValueError, match="check the evidence quote"):
        rt.grade_to_parquet(src, RUBRIC, model=rt.ScriptedJudge(), output=out, output_constraints=[on_evidence],
                            progress=False)  # fmt: skip
    assert not list(out.glob("*"))  # no manifest left behind to refuse the next run
    rt.grade_to_parquet(src, RUBRIC, model=rt.ScriptedJudge(), output=out, progress=False)
    with pytest.raises(ValueError, match="holds parts graded with other settings"):
        rt.grade_to_parquet(src, RUBRIC, model=rt.ScriptedJudge(), output=out, progress=False,
                            output_constraints=[{"id": "s", "kind": "token", "token": "z"}])  # fmt: skip


def test_estimate_cost_counts_the_rules_the_judge_will_be_told() -> None:
    """Before: estimate_cost had no output_constraints=, so it under-counted what grade sends."""
    r = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}])
    df = pl.DataFrame({"submission": ["hi there"] * 3})
    rule = [{"id": "short", "kind": "word_count", "max": 30}]
    plain = rt.estimate_cost(df, r, model="openai/gpt-4.1-mini")["prompt_tokens"].item()
    told = rt.estimate_cost(df, r, model="openai/gpt-4.1-mini", output_constraints=rule)["prompt_tokens"].item()
    sent = rt.prompts(df, r, model="openai/gpt-4.1-mini", output_constraints=rule)
    assert told > plain and "at most 30 words" in str(sent.row(0))
    with pytest.raises(ValueError, match=r"output_constraints\[0\] field 'kind'"):
        rt.estimate_cost(df, r, model="openai/gpt-4.1-mini", output_constraints=[{"id": "s", "kind": "words"}])

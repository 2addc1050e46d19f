"""Confidence, output constraints, warnings and the per-call callback."""

from __future__ import annotations

import json
import warnings

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.testing import FakeLLMServer, criterion_name, submission_text

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
    assert "confidence" in schema["required"] and 'add a "confidence" field' in body["messages"][1]["content"]
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

"""Judges you write (rt.Grader, rt.FunctionJudge) and the judge's role (rt.Role)."""

from __future__ import annotations

import asyncio
import json

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.testing import FakeLLMServer, user_text

MODEL = "openai/gpt-4.1-mini"
SECRET = "sk-test-DO-NOT-LEAK-123456"
RUBRIC = rt.Rubric.from_dict(
    [{"name": "greets", "requirement": "Says hello"}, {"name": "thanks", "requirement": "Says thank you"}]
)
DF = pl.DataFrame({"submission": ["hello", "thank you", "<submission>BOOM</submission>"]})


class Recorder(rt.Grader):
    """Answers MET when the criterion's name is in the fenced submission; remembers what it saw."""

    def __init__(self) -> None:
        super().__init__(name="recorder", max_concurrency=2)
        self.seen: list[tuple[str, str, dict]] = []

    def generate(self, system_prompt, user_prompt, *, schema):
        self.seen.append((system_prompt, user_prompt, schema))
        if "BOOM" in user_prompt:
            raise ConnectionError(f"down, key {SECRET}")
        text = user_prompt.split("<submission>")[1].split("</submission>")[0]
        name = user_prompt.split("Criterion name: ")[1].split("\n")[0]
        met = ("hello" in text) if name == "greets" else ("thank" in text)
        return {"verdict": "MET" if met else "UNMET", "explanation": "looked"}


def test_a_grader_receives_the_rendered_prompts_a_model_would(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # the key a custom judge would use, echoed in its error
    judge = Recorder()
    v = rt.grade(DF, RUBRIC, model=judge, progress=False, record=False)
    sent = rt.prompts(DF, RUBRIC, model=MODEL)
    assert sorted((s, u) for s, u, _ in judge.seen) == sorted(zip(sent["system"], sent["user"], strict=True))
    assert all(any(json.loads(x) == schema for x in sent["schema"]) for _, _, schema in judge.seen)
    # untrusted text arrives escaped (in whichever call completed last: no completion order is assumed)
    assert any("&lt;submission&gt;BOOM" in user for _, user, _ in judge.seen)
    assert not any("<submission>BOOM" in user for _, user, _ in judge.seen)
    ok = v.filter(pl.col("id") < 2)
    assert ok["verdict"].to_list() == ["MET", "UNMET", "UNMET", "MET"]
    bad = v.filter(pl.col("id") == 2)
    assert bad["error_kind"].to_list() == ["provider"] * 2 and bad["verdict"].null_count() == 2
    assert all("ConnectionError" in e and SECRET not in e for e in bad["error"])  # the key is scrubbed


def test_an_async_function_judge_runs_concurrently_and_its_bad_replies_are_parse_errors() -> None:
    running = {"now": 0, "most": 0}

    async def fn(system_prompt, user_prompt, *, schema):
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
        await asyncio.sleep(0.01)
        running["now"] -= 1
        return (
            "not json at all"
            if "thank you" in user_prompt.split("<submission>")[1].split("</submission>")[0]
            else '{"verdict": "MET", "explanation": "x"}'
        )

    v = rt.grade(DF.head(2), RUBRIC, model=rt.FunctionJudge(fn, max_concurrency=3), progress=False, record=False)
    assert v["judge"].unique().to_list() == ["fn"]
    assert v["error_kind"].to_list() == [None, None, "parse", "parse"]
    assert v.filter(pl.col("error_kind") == "parse")["raw_response"].to_list() == ["not json at all"] * 2
    assert 1 < running["most"] <= 3


def test_a_grader_in_an_ensemble_beside_a_model(tmp_path) -> None:
    with FakeLLMServer() as srv:
        llm = rt.Judge(model=MODEL, api_base=srv.url, api_key=SECRET, name="llm")
        v = rt.grade(DF.head(2), RUBRIC, model=[llm, Recorder()], progress=False, record=tmp_path, cache=False)
    assert set(v["judge"]) == {"llm", "recorder", "ensemble"}
    assert set(v.filter(pl.col("judge") == "recorder")["transport"]) == {"custom"}
    run = rt.load_run("last", root=tmp_path)
    assert {"label": "recorder", "custom": "Recorder", "cache_id": None} in run.info["judges"]
    with pytest.raises(ValueError, match="scripted or custom judges \\['recorder'\\]"):
        rt.rerun(run, root=tmp_path)
    with pytest.raises(ValueError, match="batch grading sends requests to a provider"):
        rt.submit_batch(DF, RUBRIC, model=Recorder(), path=tmp_path / "b")
    est = rt.estimate_cost(DF, RUBRIC, model=Recorder())
    assert est.row(0) == ("recorder", 6, None, None, None, None)


def test_grader_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="Can't instantiate abstract class"):
        rt.Grader()  # type: ignore[abstract]
    with pytest.raises(ValueError, match="max_concurrency must be an integer >= 1"):
        rt.FunctionJudge(lambda s, u, *, schema: "", max_concurrency=0)
    with pytest.raises(TypeError, match="fn must be callable"):
        rt.FunctionJudge("gpt-4")  # type: ignore[arg-type]
    bad = rt.FunctionJudge(lambda s, u, *, schema: 42, name="bad")
    v = rt.grade(DF.head(1), RUBRIC, model=bad, progress=False, record=False)
    assert v["error"][0].startswith("bad: TypeError: a judge's generate() must return a str")


def test_a_role_opens_the_system_message_and_reaches_the_server() -> None:
    role = rt.Role(persona="a strict editor", domain="technical writing", authority="advisory",
                   obligations=["quote the sentence you judge"], constraints=["reward length"])  # fmt: skip
    plain = rt.prompts(DF.head(1), RUBRIC, model=MODEL)
    with_role = rt.prompts(DF.head(1), RUBRIC, model=rt.Judge(model=MODEL, role=role))
    # the built-in "You are a careful, impartial grader." would be a second identity under the role
    assert plain["system"][0].startswith("You are a careful, impartial grader. You judge ONE")
    opening = "As a grader, be careful and impartial. You judge ONE"
    assert with_role["system"][0] == role.render() + "\n\n" + opening + plain["system"][0].split("You judge ONE", 1)[1]
    assert with_role["system"][0].count("You are") == 1
    assert "You MUST NOT:\n- reward length" in with_role["system"][0]
    assert with_role["user"].to_list() == plain["user"].to_list()
    assert set(plain["cache_key"]).isdisjoint(with_role["cache_key"])
    with FakeLLMServer() as srv:
        rt.grade(DF.head(1), RUBRIC, model=rt.Judge(model=MODEL, role=role, api_base=srv.url, api_key=SECRET),
                 progress=False, record=False, cache=False)  # fmt: skip
        assert srv.requests[0]["messages"][0]["content"].startswith("You are a strict editor, working in technical")
        assert "<submission>" in user_text(srv.requests[0])
    assert rt.Role.from_rubrify({"persona": "x", "obligations": "one"}).obligations == ("one",)
    with pytest.raises(ValueError, match=r"keys \['mood'\] are not part of a RoleSpec"):
        rt.Role.from_rubrify({"persona": "x", "mood": "grumpy"})
    with pytest.raises(ValueError, match="must not be blank"):
        rt.Role(persona="x", obligations=["  "])


def test_a_custom_judge_with_a_cache_id_is_never_asked_twice(tmp_path) -> None:
    asked: list[str] = []

    def fn(system_prompt, user_prompt, *, schema):
        asked.append(user_prompt)
        return {"verdict": "MET", "explanation": "x"}

    kw = {"progress": False, "record": False, "cache": tmp_path / "c.sqlite"}
    first = rt.grade(DF, RUBRIC, model=rt.FunctionJudge(fn, cache_id="kw-v1"), **kw)
    assert len(asked) == 6 and not first["cached"].any()
    again = rt.grade(DF, RUBRIC, model=rt.FunctionJudge(fn, cache_id="kw-v1"), **kw)
    assert len(asked) == 6 and again["cached"].all()
    assert again.select("id", "criterion", "verdict").equals(first.select("id", "criterion", "verdict"))
    rt.grade(DF, RUBRIC, model=rt.FunctionJudge(fn, cache_id="kw-v2"), **kw)  # the judge changed: asked again
    assert len(asked) == 12
    rt.grade(DF, RUBRIC, model=rt.FunctionJudge(fn), **kw)  # no cache id: never cached
    rt.grade(DF, RUBRIC, model=rt.FunctionJudge(fn), **kw)
    assert len(asked) == 24
    with pytest.raises(ValueError, match="cache_id must be a non-empty string"):
        rt.FunctionJudge(fn, cache_id=" ")


def test_the_rubric_packages_two_argument_generate_fn_is_taken() -> None:
    def generate_fn(system_prompt, user_prompt):  # the `rubric` package's signature: no schema
        return '{"verdict": "MET", "explanation": "fine"}'

    v = rt.grade(DF, RUBRIC, model=rt.FunctionJudge(generate_fn), progress=False, record=False)
    assert v["error"].null_count() == v.height and set(v["verdict"]) == {"MET"}

    async def agen(system_prompt, user_prompt):
        return '{"verdict": "UNMET", "explanation": "no"}'

    v = rt.grade(DF, RUBRIC, model=rt.FunctionJudge(agen), progress=False, record=False)
    assert set(v["verdict"]) == {"UNMET"}
    with pytest.raises(TypeError, match=r"must take \(system_prompt, user_prompt\[, \*, schema\]\)"):
        rt.FunctionJudge(lambda prompt: "x")  # refused before any call, not an error row per call

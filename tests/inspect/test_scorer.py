"""rt.inspect.rubric_scorer inside real Inspect AI evals (offline: mock model, scripted or fake-server judge)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import polars as pl
import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample

import rubrictools as rt
from rubrictools.testing import FakeLLMServer, Reply

from .conftest import replay

RUBRIC = rt.Rubric.from_dict(
    [
        {"name": "polite", "requirement": "Says please or thanks", "weight": 2},
        {"name": "answers", "requirement": "Gives a number", "weight": 1},
        {"name": "rude", "requirement": "Insults the user", "weight": -3},
    ]
)
ANSWERS = {"q1": "Thanks! It is 4.", "q2": "It is 7, idiot.", "q3": "Please ask again.", "q4": "thanks, 12"}
MODEL = "openai/gpt-4.1-mini"


def rule(text: str, c: rt.Criterion) -> tuple[str, str]:
    low = text.lower()
    hit = {
        "polite": "thank" in low or "please" in low,
        "answers": any(ch.isdigit() for ch in low),
        "rude": "idiot" in low,
    }
    return ("MET" if hit[c.name] else "UNMET", f"{c.name} checked")


def run(scorer, logs, model=None):
    dataset = [Sample(id=k, input=f"question {k}", target=f"reference for {k}") for k in ANSWERS]
    model = model or replay("system-a", lambda q: ANSWERS[q.split()[-1]])
    return eval(Task(dataset=dataset, scorer=scorer), model=model, display="none", log_dir=logs)[0]


def fake_judge(srv: FakeLLMServer) -> rt.Judge:
    return rt.Judge(model=MODEL, api_base=srv.url, api_key="sk-test-not-a-key", backoff_base=0.01)


def test_inspect_records_the_rubric_score_and_every_verdict_equal_to_rt_score(logs):
    log = run(rt.inspect.rubric_scorer(RUBRIC, model=rt.ScriptedJudge(rule=rule)), logs)
    assert log.status == "success"
    v = rt.inspect.read_verdicts(logs)
    assert v.height == 4 * 3 and set(v["id"]) == set(ANSWERS) and (v["system"] == "mockllm/system-a").all()
    expected = dict(rt.score(v, RUBRIC).select("id", "score").iter_rows())
    # by hand: polite (2) + answers (1) out of 3; q3 is polite only
    assert expected["q1"] == expected["q4"] == pytest.approx(1.0) and expected["q3"] == pytest.approx(2 / 3)
    for sample in log.samples:
        s = sample.scores["rubric"]
        assert s.value == pytest.approx(expected[sample.id]) and s.answer == ANSWERS[sample.id]
        meta = s.metadata["rubrictools"]
        assert [r["criterion"] for r in meta["verdicts"]] == ["polite", "answers", "rude"]
        assert meta["score"] == pytest.approx(expected[sample.id])
        assert s.explanation.splitlines()[1] == "- polite: " + meta["verdicts"][0]["verdict"] + " (polite checked)"
    assert log.results.scores[0].metrics["mean"].value == pytest.approx(sum(expected.values()) / 4)
    assert rt.inspect.read_rubric(log) == RUBRIC


@pytest.mark.parametrize("reference", [False, True])
def test_the_judge_sees_the_input_and_the_target_only_when_asked(logs, reference):
    with FakeLLMServer() as srv:
        run(rt.inspect.rubric_scorer(RUBRIC, model=fake_judge(srv), cache=False, reference=reference), logs)
        texts = ["\n".join(str(m["content"]) for m in r["messages"]) for r in srv.requests]
    assert len(texts) == 4 * 3
    for k, answer in ANSWERS.items():
        mine = [t for t in texts if answer in t]
        assert len(mine) == 3 and all(f"question {k}" in t for t in mine)
        assert all((f"reference for {k}" in t) is reference for t in mine)


def test_a_failed_judge_call_is_an_unscored_sample_with_its_error_rows_kept(logs):
    with FakeLLMServer(script=lambda body: Reply(status=400)) as srv:
        log = run(rt.inspect.rubric_scorer(RUBRIC, model=fake_judge(srv), cache=False), logs)
    assert log.status == "success"
    for sample in log.samples:
        s = sample.scores["rubric"]
        assert s.reason == "grader_failed" and s.value != s.value  # NaN: Inspect leaves it out of its metrics
        assert all(r["error"] and r["verdict"] is None for r in s.metadata["rubrictools"]["verdicts"])
        assert "ERROR" in s.explanation
    table = rt.inspect.read_log(log)
    assert table["score"].is_null().all() and (table["reason"] == "grader_failed").all()


def test_a_second_run_is_served_from_the_cache(logs, tmp_path):
    """Samples are graded concurrently, each by its own agrade call on Inspect's loop: before
    the transport's session was shared safely, a sample ending first closed it under the others
    and their answers were lost (asked again on the next run)."""
    cache = tmp_path / "cache.sqlite"
    with FakeLLMServer() as srv:
        first = run(rt.inspect.rubric_scorer(RUBRIC, model=fake_judge(srv), cache=cache), logs)
        paid = srv.hits
        second = run(rt.inspect.rubric_scorer(RUBRIC, model=fake_judge(srv), cache=cache), logs)
        assert paid == 12 and srv.hits == paid  # nothing asked twice
    v1, v2 = rt.inspect.read_verdicts(first), rt.inspect.read_verdicts(second)
    assert not v1["cached"].any() and v2["cached"].all()
    assert (
        v1.select("id", "criterion", "verdict")
        .sort("id", "criterion")
        .equals(v2.select("id", "criterion", "verdict").sort("id", "criterion"))
    )


def test_one_budget_spans_the_eval_and_is_never_passed(logs):
    """Every request of every sample reserves its worst case from one shared budget: at 4
    samples at once the spend stays under the cap, and the samples it stopped say so."""
    with FakeLLMServer() as srv:
        judge = rt.Judge(model=MODEL, api_base=srv.url, api_key="sk-test-not-a-key", backoff_base=0.01, max_tokens=50)
        probe = rt.grade(
            pl.DataFrame({"submission": [ANSWERS["q1"]]}),
            RUBRIC,
            model=judge,
            cache=False,
            progress=False,
            record=False,
        )
        per_request = float(probe["cost_usd"].max())
        srv.reset()
        cap = 5 * per_request
        log = run(rt.inspect.rubric_scorer(RUBRIC, model=judge, cache=False, max_cost_usd=cap), logs)
        hits = srv.hits
    v = rt.inspect.read_verdicts(log)
    assert float(v["cost_usd"].sum()) <= cap
    assert 1 <= hits < 4 * 3 and v["cost_usd"].is_not_null().sum() == hits
    stopped = [s for s in log.samples if s.scores["rubric"].reason == "scoring_failed"]
    assert stopped and all("budget exceeded" in s.scores["rubric"].explanation for s in stopped)


def test_a_budget_smaller_than_one_request_sends_nothing(logs):
    with FakeLLMServer() as srv:
        log = run(rt.inspect.rubric_scorer(RUBRIC, model=fake_judge(srv), cache=False, max_cost_usd=1e-9), logs)
        assert srv.hits == 0
    assert {s.scores["rubric"].reason for s in log.samples} == {"scoring_failed"}


def test_a_budget_on_a_model_without_a_price_is_refused_before_the_eval():
    with pytest.raises(ValueError, match="cannot be enforced"):
        rt.inspect.rubric_scorer(
            RUBRIC, model=rt.Judge(model="openai/no-such-model-xyz", api_key="sk-test"), max_cost_usd=1.0
        )


def test_an_agent_history_with_tool_calls_is_graded_as_a_conversation(logs):
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.solver import Generate, TaskState, solver
    from inspect_ai.tool import ToolCall

    @solver
    def agent():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            call = ToolCall(id="c1", function="add", arguments={"x": 2, "y": 2})
            state.messages += [
                ChatMessageAssistant(content="", tool_calls=[call]),
                ChatMessageTool(content="4", tool_call_id="c1", function="add"),
                ChatMessageAssistant(content="Thanks for waiting: it is 4."),
            ]
            state.output.completion = "Thanks for waiting: it is 4."
            return state

        return solve

    seen: list[str] = []

    def conv_rule(text: str, c: rt.Criterion) -> str:
        seen.append(text)
        return "MET"

    scorer = rt.inspect.rubric_scorer(
        RUBRIC, model=rt.ScriptedJudge(rule=conv_rule), submission="messages", conversation_part="whole"
    )
    task = Task(
        dataset=[Sample(id="a", input=[ChatMessageUser(content="What is 2+2?")])], solver=agent(), scorer=scorer
    )
    log = eval(task, model=replay("agent", str), display="none", log_dir=logs)[0]
    assert log.status == "success", log.error
    assert seen and all("[tool call] add(" in t and '"x": 2' in t and "What is 2+2?" in t for t in seen)
    assert log.samples[0].scores["rubric"].metadata["rubrictools"]["verdicts"][0]["verdict"] == "MET"


@pytest.mark.slow
def test_inspect_eval_on_the_command_line_runs_the_rubric_scorer(tmp_path):
    task_file = tmp_path / "greet.py"
    task_file.write_text(
        textwrap.dedent(
            """
            import rubrictools as rt
            from inspect_ai import Task, task
            from inspect_ai.dataset import Sample

            @task
            def greet():
                rubric = rt.Rubric.from_dict([{"name": "output", "requirement": "Says Default output"}])
                scorer = rt.inspect.rubric_scorer(rubric, model="rubrictools/scripted")
                return Task(dataset=[Sample(input="Hi")], scorer=scorer)
            """
        )
    )
    logs = tmp_path / "logs"
    cmd = [sys.executable, "-m", "inspect_ai", "eval", "greet.py", "--model", "mockllm/model", "--log-dir", str(logs)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    v = rt.inspect.read_verdicts(logs)
    assert v.height == 1 and v["criterion"][0] == "output" and v["verdict"][0] in ("MET", "UNMET")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"rubric": None}, ValueError, "needs a rubric"),
        ({"rubric": "polite: be nice"}, ValueError, "rubric"),
        ({"model": None}, ValueError, "model="),
        ({"model": 3}, TypeError, "model"),
        ({"model": ""}, ValueError, "empty string"),
        ({"mode": "per_crit"}, ValueError, "mode must be one of"),
        ({"submission": "conversation"}, ValueError, "submission must be"),
        ({"conversation_part": "last"}, ValueError, "conversation_part"),
        ({"max_cost_usd": -1}, ValueError, "max_cost_usd"),
        ({"max_cost_usd": "5"}, TypeError, "max_cost_usd"),
        ({"query": "yes"}, TypeError, "query"),
        ({"reference": 1}, TypeError, "reference"),
        ({"name": ""}, ValueError, "name"),
    ],
)
def test_bad_arguments_are_refused_before_any_sample_runs(kwargs, error, match):
    args = {"rubric": RUBRIC, "model": "rubrictools/scripted", **kwargs}
    with pytest.raises(error, match=match):
        rt.inspect.rubric_scorer(args.pop("rubric"), **args)


def test_without_inspect_installed_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai.scorer", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'rubrictools\[inspect\]'"):
        rt.inspect.rubric_scorer(RUBRIC, model="rubrictools/scripted")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"model": "rubrictools/Scripted"}, ValueError, "the offline stand-in is 'rubrictools/scripted'"),
        ({"model": "openai/gpt-4.1-mini"}, ValueError, "no API key"),
        ({"cache": 123}, TypeError, "cache must be True, False, a file path"),
        ({"cache": "/etc/passwd/cache.sqlite"}, ValueError, "cannot be opened"),
        ({"conversation_part": "whole"}, ValueError, "applies to submission='messages'"),
        ({"name": "rubric/a"}, ValueError, "without '/'"),
        ({"model": None}, ValueError, "rt.inspect.rubric_scorer needs model="),
    ],
)
def test_settings_that_would_fail_inside_every_sample_fail_when_the_scorer_is_built(kwargs, error, match, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = {"model": "rubrictools/scripted", **kwargs}
    with pytest.raises(error, match=match):
        rt.inspect.rubric_scorer(RUBRIC, **args)


def test_a_scorer_with_a_budget_runs_again_in_a_second_eval(logs):
    """Each eval runs its own event loop: the budget's wait event is made for the loop it is on
    (before, the second eval's waiting requests failed with 'bound to a different event loop')."""
    with FakeLLMServer() as srv:
        judge = rt.Judge(model=MODEL, api_base=srv.url, api_key="sk-test-not-a-key", backoff_base=0.01, max_tokens=50)
        scorer = rt.inspect.rubric_scorer(RUBRIC, model=judge, cache=False, max_cost_usd=1.0)
        first, second = run(scorer, logs), run(scorer, logs)
    for log in (first, second):
        reasons = {s.scores["rubric"].reason for s in log.samples}
        assert reasons == {None}, [s.scores["rubric"].explanation for s in log.samples]


def test_a_target_of_several_answers_is_shown_one_by_one(logs):
    with FakeLLMServer() as srv:
        task = Task(
            dataset=[Sample(id="q", input="greet", target=["hello there", "hi there"])],
            scorer=rt.inspect.rubric_scorer(RUBRIC, model=fake_judge(srv), cache=False, reference=True),
        )
        eval(task, model=replay("a", lambda q: "hello"), display="none", log_dir=logs)
        text = srv.requests[0]["messages"][-1]["content"]
    assert "hello there\n\nhi there" in text


def test_an_empty_list_of_judges_is_refused():
    with pytest.raises(ValueError, match="needs model="):
        rt.inspect.rubric_scorer(RUBRIC, model=[])

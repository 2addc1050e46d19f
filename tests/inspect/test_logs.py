"""rt.inspect.read_log / read_verdicts / read_rubric on logs written by real Inspect AI evals."""

from __future__ import annotations

import polars as pl
import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, includes, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver

import rubrictools as rt
from rubrictools.inspect.logs import LOG_SCHEMA

from .conftest import replay

QUESTIONS = {"a": "capital of France", "b": "2+2", "c": "largest planet", "d": "author of Hamlet"}
RIGHT = {"a": "Paris", "b": "4", "c": "Jupiter", "d": "Shakespeare"}


@scorer(metrics={"right": [mean()], "words": [mean()]})
def two_numbers():
    async def score(state: TaskState, target: Target) -> Score:
        text = state.output.completion
        return Score(value={"right": CORRECT if target.text in text else INCORRECT, "words": len(text.split())})

    return score


def dataset():
    return [Sample(id=k, input=q, target=RIGHT[k]) for k, q in QUESTIONS.items()]


def answer_with(known: set[str]):
    by_question = {q: k for k, q in QUESTIONS.items()}
    return lambda q: f"It is {RIGHT[by_question[q]]}." if by_question[q] in known else "I do not know."


def test_one_row_per_sample_and_scorer_with_every_field(logs):
    log = eval(
        Task(dataset=dataset(), scorer=[includes(), two_numbers()]),
        model=replay("sys-x", answer_with({"a", "b", "c"})),
        display="none",
        log_dir=logs,
    )[0]
    t = rt.inspect.read_log(log)
    assert t.schema == pl.Schema(LOG_SCHEMA)
    assert t.height == 4 * 3 and sorted(set(t["scorer"])) == ["includes", "two_numbers/right", "two_numbers/words"]
    inc = t.filter(pl.col("scorer") == "includes").sort("id")
    assert inc["score"].to_list() == [1.0, 1.0, 1.0, 0.0] and inc["value"].to_list() == ["C", "C", "C", "I"]
    assert inc["target"].to_list() == [RIGHT[k] for k in "abcd"] and inc["input"][0] == QUESTIONS["a"]
    assert inc["output"][0] == "It is Paris." and (inc["system"] == "mockllm/sys-x").all()
    words = t.filter(pl.col("scorer") == "two_numbers/words").sort("id")
    assert words["score"].to_list() == [3.0, 3.0, 3.0, 4.0] and words["value"][0] == "3"
    assert (t["input_tokens"] > 0).all() and (t["output_tokens"] == 3).all() and t["cost_usd"].is_null().all()
    assert (t["epoch"] == 1).all() and (t["task"] == log.eval.task).all()
    assert rt.inspect.read_log(log, scorer="includes").equals(t.filter(pl.col("scorer") == "includes"))


def test_three_models_logs_make_one_leaderboard(logs):
    systems = {"strong": {"a", "b", "c", "d"}, "middling": {"a", "b"}, "weak": set()}
    for name, known in systems.items():
        eval(
            Task(dataset=dataset(), scorer=includes()),
            model=replay(name, answer_with(known)),
            display="none",
            log_dir=logs,
        )
    t = rt.inspect.read_log(logs)  # the folder: every log in it
    assert t.height == 12 and t["system"].n_unique() == 3
    means = dict(t.group_by("system").agg(pl.col("score").mean()).iter_rows())
    assert means == {"mockllm/strong": 1.0, "mockllm/middling": 0.5, "mockllm/weak": 0.0}
    prefs = rt.preferences_from_scores(t)
    board = rt.rank_systems(prefs, n_resamples=200, seed=0)
    order = (
        board.table.sort("rating", descending=True)["system"].to_list()
        if hasattr(board, "table")
        else (board.sort("rating", descending=True)["system"].to_list())
    )
    assert order == ["mockllm/strong", "mockllm/middling", "mockllm/weak"]


def test_a_sample_that_failed_keeps_a_row_with_its_error(logs):
    @solver
    def flaky():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if state.sample_id == "b":
                raise RuntimeError("tool crashed")
            return await generate(state)

        return solve

    log = eval(
        Task(dataset=dataset(), solver=flaky(), scorer=includes()),
        model=replay("sys-x", answer_with({"a"})),
        display="none",
        log_dir=logs,
        fail_on_error=False,
    )[0]
    t = rt.inspect.read_log(log).sort("id")
    failed = t.filter(pl.col("id") == "b")
    assert failed.height == 1 and "tool crashed" in failed["error"][0] and failed["scorer"][0] is None
    assert t.filter(pl.col("id") != "b")["error"].is_null().all()


def test_json_logs_read_as_eval_logs(logs):
    eval(
        Task(dataset=dataset(), scorer=includes()),
        model=replay("j", answer_with({"a"})),
        display="none",
        log_dir=logs,
        log_format="json",
    )
    t = rt.inspect.read_log(logs)
    assert t.height == 4 and t["log"][0].endswith(".json") and t["score"].sum() == 1.0


def test_verdicts_and_rubric_of_several_runs_read_back(logs):
    rubric = rt.Rubric.from_dict([{"name": "names_it", "requirement": "Names an answer", "weight": 1}])
    judge = rt.ScriptedJudge(rule=lambda text, c: "UNMET" if "not know" in text else "MET")
    for name, known in {"strong": {"a", "b", "c", "d"}, "weak": {"a"}}.items():
        task = Task(dataset=dataset(), scorer=[includes(), rt.inspect.rubric_scorer(rubric, model=judge)])
        eval(task, model=replay(name, answer_with(known)), display="none", log_dir=logs)
    v = rt.inspect.read_verdicts(logs)
    assert v.height == 8 and set(v["system"]) == {"mockllm/strong", "mockllm/weak"}
    assert v.columns[:8] == ["id", "criterion", "verdict", "value", "explanation", "error", "judge", "weight"]
    assert rt.inspect.read_rubric(logs) == rubric
    scores = rt.score(v.filter(pl.col("system") == "mockllm/weak"), rubric)
    recorded = rt.inspect.read_log(logs, scorer="rubric").filter(pl.col("system") == "mockllm/weak")
    assert dict(scores.select("id", "score").iter_rows()) == dict(recorded.select("id", "score").iter_rows())
    # human labels on the same ids: the judge's agreement reads the verdict table as is
    human = v.filter(pl.col("system") == "mockllm/weak").select(
        "id", "criterion", pl.lit("ann").alias("rater"), pl.col("verdict").alias("label")
    )
    agree = rt.agreement(v.filter(pl.col("system") == "mockllm/weak"), human, rubric, n_resamples=0)
    assert agree.height >= 1


def test_logs_without_rubrictools_scores_say_what_they_hold(logs):
    log = eval(
        Task(dataset=dataset(), scorer=includes()), model=replay("x", answer_with(set())), display="none", log_dir=logs
    )[0]
    with pytest.raises(
        ValueError, match=r"no verdicts recorded by rt.inspect.rubric_scorer \(scorers found: \['includes'\]\)"
    ):
        rt.inspect.read_verdicts(log)
    with pytest.raises(ValueError, match=r"no rt.inspect.rubric_scorer in these logs \(scorers: \['includes'\]\)"):
        rt.inspect.read_rubric(log)


@pytest.mark.parametrize(
    ("logs_arg", "error", "match"),
    [
        ("no/such/file.eval", FileNotFoundError, "is not a file or a folder"),
        ([], ValueError, "empty list"),
        (42, TypeError, "expected a path"),
        (pl.DataFrame({"a": [1]}), TypeError, "expected a path"),
    ],
)
def test_bad_log_arguments_are_named(logs_arg, error, match):
    with pytest.raises(error, match=match):
        rt.inspect.read_log(logs_arg)


def test_a_folder_without_logs_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no \.eval or \.json Inspect log"):
        rt.inspect.read_log(tmp_path)


def test_the_run_status_and_the_judges_cost_are_columns(logs):
    from rubrictools.testing import FakeLLMServer

    rubric = rt.Rubric.from_dict([{"name": "names_it", "requirement": "Names an answer", "weight": 1}])
    with FakeLLMServer() as srv:
        judge = rt.Judge(model="openai/gpt-4.1-mini", api_base=srv.url, api_key="sk-test", backoff_base=0.01)
        task = Task(dataset=dataset(), scorer=[includes(), rt.inspect.rubric_scorer(rubric, model=judge, cache=False)])
        log = eval(task, model=replay("x", answer_with({"a"})), display="none", log_dir=logs)[0]
    t = rt.inspect.read_log(log)
    assert (t["status"] == "success").all()
    ours, builtin = t.filter(pl.col("scorer") == "rubric"), t.filter(pl.col("scorer") == "includes")
    assert (ours["judge_cost_usd"] > 0).all() and (ours["judge_tokens"] > 0).all()
    assert builtin["judge_cost_usd"].is_null().all()
    v = rt.inspect.read_verdicts(log)
    assert ours["judge_cost_usd"].sum() == pytest.approx(v["cost_usd"].sum())


def test_a_scorer_name_that_matches_nothing_is_an_error_naming_the_scorers(logs):
    log = eval(
        Task(dataset=dataset(), scorer=[includes(), two_numbers()]),
        model=replay("x", answer_with({"a"})),
        display="none",
        log_dir=logs,
    )[0]
    with pytest.raises(ValueError, match=r"scorer='two_numbers' matches no score .*'scorer/key'"):
        rt.inspect.read_log(log, scorer="two_numbers")


def test_two_rubric_scorers_must_be_told_apart(logs):
    r1 = rt.Rubric.from_dict([{"name": "a", "requirement": "A", "weight": 1}])
    r2 = rt.Rubric.from_dict([{"name": "b", "requirement": "B", "weight": 1}])
    scorers = [
        rt.inspect.rubric_scorer(r1, model="rubrictools/scripted"),
        rt.inspect.rubric_scorer(r2, model="rubrictools/scripted"),
    ]
    log = eval(
        Task(dataset=dataset(), scorer=scorers), model=replay("x", answer_with(set())), display="none", log_dir=logs
    )[0]
    names = sorted(log.samples[0].scores)
    with pytest.raises(ValueError, match="choose one with scorer="):
        rt.inspect.read_verdicts(log)
    second = names[1]  # Inspect renames the clash in its results ('rubric1'), not in the eval spec
    assert set(rt.inspect.read_verdicts(log, scorer=second)["criterion"]) == {"b"}
    assert rt.inspect.read_rubric(log, scorer=second) == r2


def test_epochs_are_said_and_list_eval_logs_handles_are_read(logs):
    from inspect_ai.log import list_eval_logs

    rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "A", "weight": 1}])
    eval(
        Task(dataset=dataset(), scorer=rt.inspect.rubric_scorer(rubric, model="rubrictools/scripted"), epochs=2),
        model=replay("x", answer_with(set())),
        display="none",
        log_dir=logs,
    )
    with pytest.warns(UserWarning, match=r"2 epochs \(\[1, 2\]\)"):
        v = rt.inspect.read_verdicts(list_eval_logs(logs))
    assert v.height == 8 and sorted(set(v["epoch"])) == [1, 2]


def test_a_file_that_is_not_a_log_and_a_log_without_samples_are_said_so(logs, tmp_path):
    from inspect_ai.log import list_eval_logs, read_eval_log

    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="is not a readable Inspect log"):
        rt.inspect.read_log(bad)
    eval(
        Task(dataset=dataset(), scorer=includes()), model=replay("x", answer_with(set())), display="none", log_dir=logs
    )
    header = read_eval_log(list_eval_logs(logs)[0], header_only=True)
    with pytest.warns(UserWarning, match="holds no samples"):
        assert rt.inspect.read_log(header).height == 0


def test_a_log_given_twice_is_read_once_and_reruns_are_said(logs):
    from inspect_ai.log import list_eval_logs

    rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "A", "weight": 1}])
    for _ in range(2):  # the same task and model, run twice
        eval(
            Task(dataset=dataset(), scorer=rt.inspect.rubric_scorer(rubric, model="rubrictools/scripted")),
            model=replay("x", answer_with(set())),
            display="none",
            log_dir=logs,
        )
    first = list_eval_logs(logs)[0]
    with pytest.warns(UserWarning, match="given twice"):
        assert rt.inspect.read_log([first, first]).height == 4
    with pytest.warns(UserWarning, match="run more than once"):
        assert rt.inspect.read_verdicts(iter(list_eval_logs(logs))).height == 8  # any iterable of logs


def test_one_list_eval_logs_handle_is_one_log(logs):
    """A single EvalLogInfo is a pydantic model, which iterates over its fields: it was read as a
    list of its fields ("got tuple")."""
    from inspect_ai.log import list_eval_logs

    model = replay("x", answer_with({"a"}))
    eval(Task(dataset=dataset(), scorer=includes()), model=model, display="none", log_dir=logs)
    assert rt.inspect.read_log(list_eval_logs(logs)[0]).height == 4

"""The rubrictools command, end to end in subprocesses: files in, tables out, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from rubrictools.testing import FakeLLMServer, Reply

MODEL = "openai/fake-judge"
SECRET = "sk-cli-secret-1234567890"


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rubrictools", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


@pytest.fixture
def files(tmp_path: Path) -> Path:
    pl.DataFrame({"qid": ["q1", "q2", "q3"], "text": ["a good answer", "a bad answer", "good again"]}).write_csv(
        tmp_path / "answers.csv"
    )
    rubric = [{"name": "good", "requirement": "The answer is good"}, {"name": "clear", "requirement": "Clear"}]
    (tmp_path / "rubric.json").write_text(json.dumps(rubric))
    (tmp_path / "rubric.yaml").write_text("- name: good\n  requirement: The answer is good\n")
    return tmp_path


def test_help_shows_an_example() -> None:
    out = cli("--help")
    assert out.returncode == 0 and "rubrictools grade answers.parquet --rubric" in out.stdout
    sub = cli("grade", "--help")
    assert sub.returncode == 0 and "--api-key-env" in sub.stdout and "examples:" in sub.stdout


def test_grade_score_runs_compare_end_to_end(files: Path) -> None:
    store = files / "runs"
    common = ["--column", "text", "--id-column", "qid", "--cache", str(files / "c.sqlite"), "--record", str(store)]
    with FakeLLMServer() as server:
        base = ["--model", MODEL, "--api-base", server.url, "--api-key-env", "JUDGE_KEY", "--quiet"]
        env = {"JUDGE_KEY": SECRET}
        first = cli("grade", str(files / "answers.csv"), "--rubric", str(files / "rubric.json"), *base, *common,
                    "-o", str(files / "v1.parquet"), env=env)  # fmt: skip
        assert first.returncode == 0, first.stderr
        assert "6 verdict rows, 0 error rows" in first.stderr
        asked = len(server.requests)
        assert asked == 6 and all(r["model"] == "fake-judge" for r in server.requests)
        second = cli("grade", str(files / "answers.csv"), "--rubric", str(files / "rubric.yaml"), *base, *common,
                     "-o", str(files / "v2.csv"), env=env)  # fmt: skip
        assert second.returncode == 0, second.stderr
        assert len(server.requests) == asked  # "good" of each answer came from the cache
    v1 = pl.read_parquet(files / "v1.parquet")
    assert v1.height == 6 and set(v1["id"]) == {"q1", "q2", "q3"} and v1["error"].null_count() == 6
    assert pl.read_csv(files / "v2.csv").height == 3
    for path in [*store.rglob("*"), files / "v1.parquet"]:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes()

    scored = cli("score", str(files / "v1.parquet"), "--rubric", str(files / "rubric.json"), "-o", str(files / "s.csv"))
    assert scored.returncode == 0 and pl.read_csv(files / "s.csv").height == 3
    gate = cli("score", str(files / "v1.parquet"), "--rubric", str(files / "rubric.json"), "--at-least", "0.99")
    assert gate.returncode == 1 and "score gate failed" in gate.stderr and "help the score least" in gate.stderr

    listed = cli("runs", "--root", str(store), "-o", str(files / "runs.parquet"))
    assert listed.returncode == 0
    ids = pl.read_parquet(files / "runs.parquet")["id"].to_list()
    assert len(ids) == 2
    cmp = cli("compare", ids[0], "last", "--root", str(store), "--n-resamples", "200", "--flips", str(files / "f.csv"),
              "--name-a", "two criteria", "--name-b", "one")  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    assert "overall score" in cmp.stdout and "one - two criteria" in cmp.stderr and "cost (USD)" in cmp.stderr
    assert (files / "f.csv").exists()


def test_bad_inputs_exit_2_before_any_call(files: Path) -> None:
    with FakeLLMServer() as server:
        base = ["--model", MODEL, "--api-base", server.url, "--no-cache", "--no-record", "--quiet"]
        missing = cli("grade", str(files / "nope.csv"), "--rubric", str(files / "rubric.json"), *base)
        assert missing.returncode == 2 and "no such file" in missing.stderr
        column = cli("grade", str(files / "answers.csv"), "--rubric", str(files / "rubric.json"), *base)
        assert column.returncode == 2 and "column" in column.stderr and "submission" in column.stderr
        key = cli("grade", str(files / "answers.csv"), "--rubric", str(files / "rubric.json"), "--column", "text",
                  "--api-key-env", "NOT_SET_ANYWHERE", *base)  # fmt: skip
        assert key.returncode == 2 and "NOT_SET_ANYWHERE" in key.stderr
        assert server.requests == []
    usage = cli("grade")
    assert usage.returncode == 2 and "required" in usage.stderr


def test_error_rows_exit_1_unless_allowed(files: Path) -> None:
    with FakeLLMServer(script=lambda body: Reply(status=400)) as server:  # refused: no retry
        base = ["--model", MODEL, "--api-base", server.url, "--no-cache", "--no-record", "--quiet", "--column", "text"]
        failed = cli("grade", str(files / "answers.csv"), "--rubric", str(files / "rubric.yaml"), *base)
        assert failed.returncode == 1 and "3 error rows" in failed.stderr
        allowed = cli("grade", str(files / "answers.csv"), "--rubric", str(files / "rubric.yaml"), *base,
                      "--allow-errors")  # fmt: skip
        assert allowed.returncode == 0


def test_grouped_mode_confidence_context_and_examples_from_the_command_line(files: Path) -> None:
    rubric = [
        {"name": "good", "requirement": "The answer is good", "group": "g"},
        {"name": "clear", "requirement": "Clear", "group": "g"},
        {"name": "short", "requirement": "Short"},
    ]
    (files / "grouped.json").write_text(json.dumps(rubric))
    pl.DataFrame({"submission": ["good one"], "criterion": ["good"], "verdict": ["MET"]}).write_csv(files / "ex.csv")
    with FakeLLMServer() as server:
        base = ["--model", MODEL, "--api-base", server.url, "--no-cache", "--no-record", "--quiet", "--column", "text"]
        new = ["--mode", "grouped", "--confidence", "--criterion-context", "full", "--examples", str(files / "ex.csv")]
        out = cli("grade", str(files / "answers.csv"), "--rubric", str(files / "grouped.json"), *base, *new,
                  "-o", str(files / "v.parquet"))  # fmt: skip
        assert out.returncode == 0, out.stderr
        bodies = server.requests
    assert len(bodies) == 3 * 2  # per answer: one call for group g, one for the loose criterion
    schema = bodies[0]["response_format"]["json_schema"]["schema"]
    assert "confidence" in json.dumps(schema) and "The rest of the rubric" in bodies[0]["messages"][1]["content"]
    assert "good one" in json.dumps(bodies)  # the few-shot example was shown
    assert "confidence" in pl.read_parquet(files / "v.parquet").columns


@pytest.mark.parametrize(
    ("output", "message"),
    [("verdicts.xlsx", "unknown table format '.xlsx'"), ("missing-folder/v.csv", "does not exist")],
)
def test_an_unwritable_output_is_refused_before_any_call(files: Path, output: str, message: str) -> None:
    with FakeLLMServer() as srv:
        args = ["--column", "text", "--model", MODEL, "--api-base", srv.url, "--no-cache", "--no-record"]
        out = cli(
            "grade",
            str(files / "answers.csv"),
            "--rubric",
            str(files / "rubric.json"),
            *args,
            "-o",
            str(files / output),
        )
        assert srv.hits == 0  # nothing was paid for
    assert out.returncode == 2 and message in out.stderr


def test_help_says_each_default_once() -> None:
    out = cli("grade", "--help")
    assert out.returncode == 0 and "(default: submission) (default: submission)" not in out.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--api-base", "notaurl"], "--api-base 'notaurl': give the server's URL"),
        (["-o", "ANSWERS/out.parquet"], "is a file, not a folder"),
        (["--record", "ANSWERS"], "--record"),
    ],
)
def test_flags_that_would_fail_after_the_calls_are_refused_first(files: Path, extra: list[str], message: str) -> None:
    with FakeLLMServer() as srv:
        extra = [x.replace("ANSWERS", str(files / "answers.csv")) for x in extra]
        base = [] if "--api-base" in extra else ["--api-base", srv.url]
        args = ["--column", "text", "--model", MODEL, *base, "--no-cache", *extra]
        out = cli("grade", str(files / "answers.csv"), "--rubric", str(files / "rubric.json"), *args)
        assert srv.hits == 0
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr

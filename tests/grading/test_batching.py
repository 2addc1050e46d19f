"""Provider batch grading through litellm's files/batches API, against the loopback fake server."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge.cache import ResponseCache

from ..fake_server import Reply, default_script, submission_text
from .test_grading import MODEL, ROOT, SECRET, _reset, df, rubric, run, server, with_fake_judge  # noqa: F401 - fixtures

COMPARE = ["id", "criterion", "verdict", "value", "explanation", "judge"]


def submit(df, rubric, server, tmp_path, **kw):
    with_fake_judge(kw, server, tmp_path)
    kw.setdefault("path", tmp_path / "job")
    return rt.submit_batch(df, rubric, column="text", id_column="qid", **kw)


def collect(job, **kw):
    kw.setdefault("poll_interval", 0.01)
    kw.setdefault("progress", False)
    return job.collect(**kw)


def uploaded(server, n=0):
    """custom_ids of the n-th uploaded request file."""
    fid = sorted(b["input_file_id"] for b in server.batches.values())[n]
    return [line["custom_id"] for line in server.file_lines(fid)]


def test_round_trip_matches_live_grading_at_batch_prices(df, rubric, server, tmp_path):
    job = submit(df, rubric, server, tmp_path)
    assert len(server.batches) == 1 and server.hits == 0  # nothing live
    v = collect(job)
    assert job.done and server.hits == 0 and len(server.batch_requests) == 12
    live = run(df, rubric, server, tmp_path, cache=False)
    assert v.select(COMPARE).equals(live.select(COMPARE))
    assert v["error"].null_count() == v.height and not v["cached"].any()
    assert v["latency_s"].null_count() == v.height  # a batch line has no latency of its own (before: 0.0)
    # batch prices: litellm's *_batches prices for gpt-4.1-mini, half of live
    ratio = (v["cost_usd"] / live["cost_usd"]).to_list()
    assert all(abs(r - 0.5) < 1e-9 for r in ratio)
    # the request lines are exactly what live grading sends (model without the litellm prefix)
    bodies = {json.dumps(b, sort_keys=True) for b in server.batch_requests}
    assert bodies == {json.dumps({**b, "model": b["model"]}, sort_keys=True) for b in server.requests}
    assert all(b["model"] == "gpt-4.1-mini" for b in server.batch_requests)
    assert any(h.get("Authorization") == f"Bearer {SECRET}" for h in server.headers_seen)


def test_no_secret_in_the_job_directory_or_repr(df, rubric, server, tmp_path):
    job = submit(df, rubric, server, tmp_path)
    collect(job)
    for f in (tmp_path / "job").iterdir():
        assert SECRET.encode() not in f.read_bytes(), f.name
    assert SECRET not in repr(job)
    handle = json.loads((tmp_path / "job" / "handle.json").read_text())
    assert "api_key" not in handle["judges"][0]


def test_identical_requests_are_sent_once_and_paid_once(rubric, server, tmp_path):
    dup = pl.DataFrame({"qid": ["a", "b", "c"], "text": ["good", "good", "bad"]})
    job = submit(dup, rubric, server, tmp_path)
    v = collect(job)
    assert len(server.batch_requests) == 6  # 2 distinct texts x 3 criteria
    b = v.filter(pl.col("id") == "b")
    assert b["cached"].all() and b["verdict"].to_list() == v.filter(pl.col("id") == "a")["verdict"].to_list()
    assert rt.usage(v)["cost_usd"].item() == pytest.approx(v.filter(~pl.col("cached"))["cost_usd"].sum())


def test_cached_answers_are_not_resubmitted(df, rubric, server, tmp_path):
    run(df.head(2), rubric, server, tmp_path)  # q3, q1 graded live and cached
    assert server.hits == 6
    job = submit(df, rubric, server, tmp_path)
    assert len(uploaded(server)) == 6  # only q2 and q9
    v = collect(job)
    assert v.filter(pl.col("id").is_in(["q3", "q1"]))["cached"].all()
    assert not v.filter(pl.col("id").is_in(["q2", "q9"]))["cached"].any()
    assert "6 answered from the cache" in repr(job)
    # everything cached now: a new job submits nothing and collects at once
    job2 = submit(df, rubric, server, tmp_path, path=tmp_path / "job2")
    assert job2.rounds == [] and len(server.batches) == 1
    assert collect(job2)["cached"].all()


def test_resubmitting_to_the_same_directory_returns_the_job(df, rubric, server, tmp_path):
    job = submit(df, rubric, server, tmp_path)
    again = submit(df, rubric, server, tmp_path)
    assert len(server.batches) == 1 and again.rounds == job.rounds
    with pytest.raises(ValueError, match="holds another batch job"):
        submit(df.head(2), rubric, server, tmp_path)


def _faulty(request):
    sub = submission_text(request)
    if sub == "bad one":
        return Reply(status=500)
    if sub == "nope":
        return "this is not JSON"
    return default_script(request)


def test_failed_and_malformed_lines_become_error_rows_and_resubmit_sends_only_them(df, rubric, server, tmp_path):
    server.script = _faulty
    job = submit(df, rubric, server, tmp_path)
    v = collect(job)
    err = v.filter(pl.col("error").is_not_null())
    assert set(err["id"]) == {"q1", "q9"} and err.height == 6
    assert err.filter(pl.col("id") == "q1")["error"].str.starts_with("batch line failed: HTTP 500").all()
    assert err.filter(pl.col("id") == "q9")["error"].str.starts_with("parse").all()
    assert err["verdict"].null_count() == 6  # never a silent verdict
    assert job.unanswered() == 6
    server.script = default_script
    job.resubmit()
    assert len(server.batches) == 2 and sorted(uploaded(server, 1)) == sorted(
        json.loads(x)["custom_id"] for x in (tmp_path / "job" / "requests-00001.jsonl").read_text().splitlines()
    )
    assert len(uploaded(server, 1)) == 6
    v2 = collect(job)
    assert v2["error"].null_count() == v2.height
    assert v2.select(COMPARE).equals(run(df, rubric, server, tmp_path, cache=False).select(COMPARE))


def test_expired_batch_with_half_done_then_live_retry(df, rubric, server, tmp_path):
    server.batch_lines_per_poll = 2
    server.batch_expire_after = 6
    job = submit(df, rubric, server, tmp_path)
    v = collect(job)
    assert job.rounds[0]["status"] == "expired"
    assert v["error"].null_count() == 6
    expired = v.filter(pl.col("error").is_not_null())
    assert expired.height == 6 and expired["error"].str.contains("batch_expired").all()
    assert job.unanswered() == 6
    aiohttp = pytest.importorskip("aiohttp")
    open_before = {id(o) for o in gc.get_objects() if isinstance(o, aiohttp.ClientSession) and not o.closed}
    full = job.retry(progress=False)
    assert server.hits == 6  # only the expired lines were graded live
    # ... and the live calls left no HTTP session open (sessions an earlier test left are not this one's)
    left = [o for o in gc.get_objects() if isinstance(o, aiohttp.ClientSession) and not o.closed]
    assert not [o for o in left if id(o) not in open_before]
    assert full["error"].null_count() == full.height
    assert full.select(COMPARE).equals(run(df, rubric, server, tmp_path, cache=False).select(COMPARE))


def test_collect_without_waiting_marks_pending_rows(df, rubric, server, tmp_path):
    server.batch_lines_per_poll = 3
    job = submit(df, rubric, server, tmp_path)
    job.refresh()  # validating -> in_progress
    v = collect(job, wait=False)  # one more poll: 3 lines answered, not yet downloadable
    pending = v.filter(pl.col("error").is_not_null())
    assert pending.height == 12 and pending["error"].str.starts_with("pending: batch batch_fake").all()
    st = job.status(refresh=False)
    assert st["status"].item() == "in_progress" and st["completed"].item() == 3
    with pytest.raises(TimeoutError, match="collect it later"):
        job.wait(poll_interval=0.01, timeout=0)
    assert collect(job)["error"].null_count() == 12


def test_a_new_session_collects_from_the_directory(df, rubric, server, tmp_path):
    job = submit(df, rubric, server, tmp_path)
    path = job.path
    del job
    code = textwrap.dedent(f"""
        import rubrictools as rt
        v = rt.collect_batch({str(path)!r}, api_key={SECRET!r}, poll_interval=0.01, progress=False)
        print(v.height, v["error"].null_count(), v["verdict"].to_list()[:3])
    """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**__import__("os").environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[:2] == ["12", "12"] and "MET" in out.stdout
    assert SECRET not in out.stderr


def test_cancel_keeps_answered_lines(df, rubric, server, tmp_path):
    server.batch_lines_per_poll = 4
    job = submit(df, rubric, server, tmp_path)
    job.refresh()
    job.refresh()  # 4 answered
    job.cancel()
    v = collect(job)
    assert job.rounds[0]["status"] == "cancelled"
    assert v["error"].null_count() == 4
    assert v.filter(pl.col("error").is_not_null())["error"].str.contains("batch_cancelled").all()


def test_large_jobs_split_into_several_batches(df, rubric, server, tmp_path):
    job = submit(df, rubric, server, tmp_path, max_requests_per_batch=5)
    assert [r["requests"] for r in job.rounds] == [5, 5, 2]
    assert len(server.batches) == 3
    assert collect(job)["error"].null_count() == 12


def test_batch_api_errors_are_retried_then_reported_without_the_key(df, rubric, server, tmp_path):
    server.api_faults = [Reply(status=429, headers={"Retry-After": "0"}), Reply(status=500)]
    job = submit(df, rubric, server, tmp_path)  # upload: 429 then 500 then fine
    assert len(job.rounds) == 1
    server.api_faults = [Reply(status=500)] * 10
    with pytest.raises(RuntimeError, match="batch API: status of batch_fake0001 failed after 4 attempt") as e:
        job.refresh()
    assert SECRET not in str(e.value)
    server.api_faults = [Reply(status=400)]  # a client error is not retried
    with pytest.raises(RuntimeError, match=r"upload requests-00000.jsonl failed after 1 attempt"):
        submit(df.head(1), rubric, server, tmp_path, path=tmp_path / "j2", max_retries=5)
    assert not server.api_faults


def test_budget_guard_refuses_before_uploading(df, rubric, server, tmp_path):
    with pytest.raises(ValueError, match="could cost up to"):
        submit(df, rubric, server, tmp_path, max_cost_usd=1e-6)
    assert server.files == {} and server.batches == {}
    job = submit(df, rubric, server, tmp_path, max_cost_usd=1.0, path=tmp_path / "ok")
    assert len(job.rounds) == 1


def test_bad_inputs_are_refused(df, rubric, server, tmp_path):
    with pytest.raises(ValueError, match="ScriptedJudge"):
        rt.submit_batch(df, rubric, model=rt.ScriptedJudge(), column="text", path=tmp_path / "s")
    with pytest.raises(ValueError, match="OpenAI-style batch API"):
        rt.submit_batch(df, rubric, model="anthropic/claude-sonnet-4", column="text", path=tmp_path / "a")
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        submit(df, rubric, server, tmp_path, colum="text")
    with pytest.raises(FileNotFoundError, match="no batch job"):
        rt.collect_batch(tmp_path / "nowhere")
    with pytest.raises(TypeError, match="unexpected keyword argument 'batch'"):  # streaming has no batch jobs
        rt.grade_to_parquet(df, rubric, model=MODEL, batch=True, output=tmp_path / "o")  # type: ignore[call-arg]  # the refusal under test
    with pytest.raises(TypeError, match="unexpected keyword argument 'output'"):  # grade returns one type
        rt.grade(df, rubric, model=MODEL, output=tmp_path / "o")  # type: ignore[call-arg]  # the refusal under test


def test_grade_batch_true_is_one_call(df, rubric, server, tmp_path):
    v = run(df, rubric, server, tmp_path, batch=True, batch_dir=tmp_path / "job", poll_interval=0.01)
    assert server.hits == 0 and len(server.batches) == 1
    assert v.select(COMPARE).equals(run(df, rubric, server, tmp_path, cache=False).select(COMPARE))
    # re-running the cell resumes the same job: nothing is submitted again
    run(df, rubric, server, tmp_path, batch=True, batch_dir=tmp_path / "job", poll_interval=0.01)
    assert len(server.batches) == 1


def test_distribution_from_batch_logprobs(df, rubric, server, tmp_path):
    server.script = lambda req: Reply(content=default_script(req), label_probs={"MET": 0.7, "UNMET": 0.3})
    job = submit(df, rubric, server, tmp_path, distribution=True)
    assert all(
        b.get("logprobs") is True
        for b in server.file_lines(job.rounds[0]["input_file_id"])
        and [x["body"] for x in server.file_lines(job.rounds[0]["input_file_id"])]
    )
    v = collect(job)
    assert (v["distribution_source"] == "logprobs").all()
    probs = v["distribution"].to_list()[0]
    assert {d["label"]: round(d["prob"], 3) for d in probs}["MET"] == 0.7


def test_per_item_mode_with_rules_and_evidence(df, server, tmp_path):
    rub = rt.Rubric.from_dict(
        [
            {"name": "good", "requirement": "The answer is good", "evidence": True},
            {"name": "short", "requirement": "At most 2 words", "rule": {"max_words": 2}},
        ]
    )

    def script(req):
        sub = submission_text(req)
        verdict = "MET" if "good" in sub else "UNMET"
        return json.dumps(
            {
                "verdicts": [
                    {
                        "criterion": "good",
                        "verdict": verdict,
                        "explanation": "x",
                        "evidence": sub.split()[-1] if verdict == "MET" else "",
                    }
                ]
            }
        )

    server.script = script
    job = submit(df, rub, server, tmp_path, mode="per_item")
    v = collect(job)
    assert len(server.batch_requests) == 4  # one per submission; the rule is never sent
    assert set(v["judge"]) == {MODEL, "rule"}
    good = v.filter(pl.col("criterion") == "good")
    assert good["evidence_ok"].all() and good["error"].null_count() == 4


def test_ensemble_submits_one_batch_per_judge(df, rubric, server, tmp_path):
    judges = [
        rt.Judge(model=MODEL, name=n, api_base=server.url, api_key=SECRET, temperature=t)
        for n, t in (("a", 0.0), ("b", 0.5))
    ]
    job = submit(df, rubric, server, tmp_path, model=judges)
    assert sorted(r["judge"] for r in job.rounds) == ["a", "b"]
    v = collect(job)
    assert set(v["judge"]) == {"a", "b", "ensemble"} and v["error"].null_count() == v.height


def test_answers_land_in_the_shared_cache(df, rubric, server, tmp_path):
    job = submit(df, rubric, server, tmp_path)
    collect(job)
    assert len(ResponseCache(tmp_path / "cache.sqlite")) == 12
    v = run(df, rubric, server, tmp_path)  # live grading afterwards: all cached
    assert server.hits == 0 and v["cached"].all()


def test_job_directory_cache_when_cache_false(df, rubric, server, tmp_path):
    job = submit(df, rubric, server, tmp_path, cache=False)
    collect(job)
    assert (tmp_path / "job" / "responses.sqlite").exists()
    assert not (tmp_path / "cache.sqlite").exists()


def test_rubric_column_round_trips(server, tmp_path):
    per_row = pl.DataFrame(
        {
            "qid": ["x", "y"],
            "text": ["good", "bad"],
            "rub": [
                json.dumps([{"name": "good", "requirement": "Is good"}]),
                json.dumps(
                    [{"name": "polite", "requirement": "Is polite"}, {"name": "good", "requirement": "Is good"}]
                ),
            ],
        }
    )
    job = submit(per_row, None, server, tmp_path, rubric_column="rub")
    v = collect(job)
    assert v.select("id", "criterion").rows() == [("x", "good"), ("y", "polite"), ("y", "good")]
    assert Path(job.path / "inputs.parquet").exists()


def test_a_lost_create_answer_adopts_the_batch_instead_of_paying_twice(df, rubric, server, tmp_path):
    server.batch_create_lost = 1  # the batch is created, but the answer is a 502
    job = submit(df, rubric, server, tmp_path)
    assert len(server.batches) == 1 and job.rounds[0]["batch_id"] == "batch_fake0001"
    assert collect(job)["error"].null_count() == 12


def test_a_crash_between_upload_and_create_is_resumed(df, rubric, server, tmp_path):
    server.batch_create_lost = 1
    with pytest.raises(RuntimeError, match="create batch"):
        submit(df, rubric, server, tmp_path, max_retries=0)  # gives up: the round stays recorded
    handle = json.loads((tmp_path / "job" / "handle.json").read_text())
    assert handle["rounds"][0]["status"] == "creating-retry" and handle["rounds"][0]["batch_id"] is None
    job = submit(df, rubric, server, tmp_path)
    v = collect(job)
    assert len(server.batches) == 1 and v["error"].null_count() == 12


def test_sliced_jobs_collect_to_parquet_and_resume_an_interrupted_submission(df, rubric, server, tmp_path, monkeypatch):
    import rubrictools.grading.batch.submit as batching

    real = batching.submit_rounds
    calls = {"n": 0}

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("process killed while submitting slice 2")
        return real(*a, **k)

    monkeypatch.setattr(batching, "submit_rounds", flaky)
    src = tmp_path / "answers.parquet"
    df.write_parquet(src)
    with pytest.raises(RuntimeError, match="slice 2"):
        submit(str(src), rubric, server, tmp_path, slice_rows=2)
    assert len(server.batches) == 1
    group = submit(str(src), rubric, server, tmp_path, slice_rows=2)  # the same call again
    assert isinstance(group, rt.BatchGroup) and len(server.batches) == 2 and len(group.jobs) == 2
    lf = group.collect(output=tmp_path / "verdicts", poll_interval=0.01, progress=False)
    assert isinstance(lf, pl.LazyFrame)
    v = lf.collect()
    assert v.select(COMPARE).equals(run(df, rubric, server, tmp_path, cache=False).select(COMPARE))
    again = rt.collect_batch(tmp_path / "job", progress=False, poll_interval=0.01)  # reopened from disk
    assert again.height == 12 and again["error"].null_count() == 12
    assert group.status(refresh=False)["slice"].to_list() == [0, 1]


def test_sliced_jobs_without_ids_number_rows_globally(df, rubric, server, tmp_path):
    group = rt.submit_batch(
        df.drop("qid"),
        rubric,
        model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET),
        column="text",
        cache=tmp_path / "c.sqlite",
        path=tmp_path / "job",
        slice_rows=3,
    )
    v = group.collect(poll_interval=0.01, progress=False)
    assert sorted(set(v["id"].to_list())) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="needs path"):
        rt.submit_batch(df, rubric, model=MODEL, column="text", slice_rows=2)


def test_a_failed_submission_is_completed_by_running_it_again(df, rubric, server, tmp_path):
    server.api_faults = [Reply(status=400)]  # the upload fails after the handle is written
    with pytest.raises(RuntimeError, match="upload"):
        submit(df, rubric, server, tmp_path)
    assert server.batches == {}
    job = submit(df, rubric, server, tmp_path)  # the same call again sends what was never sent
    assert len(server.batches) == 1 and len(uploaded(server)) == 12
    submit(df, rubric, server, tmp_path)  # and a third time sends nothing more
    assert len(server.batches) == 1
    assert collect(job)["error"].null_count() == 12


def test_every_way_to_collect_a_batch_records_the_run_by_default_as_grade_does() -> None:
    """Before: collect_batch(job) recorded the run and job.collect() did not."""
    import inspect

    defaults = {
        f.__qualname__: inspect.signature(f).parameters["record"].default
        for f in (rt.grade, rt.collect_batch, rt.BatchJob.collect)
    }
    assert set(defaults.values()) == {True}, defaults

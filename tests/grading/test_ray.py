"""rt.ray.grade on a local Ray instance (2 CPUs) against the loopback fake server.

Skipped cleanly where Ray is not installed (``pip install 'rubrictools[ray]'``).
"""

from __future__ import annotations

import json
import os

import polars as pl
import pytest

ray = pytest.importorskip("ray")

import rubrictools as rt  # noqa: E402

from ..fake_server import FakeLLMServer, Reply, default_script, submission_text  # noqa: E402
from .test_grading import MODEL, SECRET  # noqa: E402

# a hang guard, not a speed test: beside two busy loops a Ray Data run took over 240 s
pytestmark = [pytest.mark.ray, pytest.mark.timeout(900)]
COMPARE = ["id", "criterion", "verdict", "value", "explanation", "judge", "error"]


def start_ray_or_skip(tries: int = 3) -> None:
    """Start a local Ray instance. On a loaded machine its raylet can miss Ray's fixed 30 s
    start-up wait ("node timed out during startup"): try again, and skip, saying why, when it
    never comes up (the machine, not rubrictools, is then at fault)."""
    last = None
    for _ in range(tries):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
            return
        except Exception as e:  # noqa: BLE001  # Ray raises a bare Exception for a start-up timeout
            last = e
            ray.shutdown()
    pytest.skip(f"a local Ray instance did not start in {tries} tries on this machine: {last}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cache_dir = tmp_path_factory.mktemp("raycache")
    old = os.environ.get("RUBRICTOOLS_CACHE_DIR")
    os.environ["RUBRICTOOLS_CACHE_DIR"] = str(cache_dir)  # inherited by the local workers
    start_ray_or_skip()
    yield cache_dir
    ray.shutdown()
    if old is None:
        os.environ.pop("RUBRICTOOLS_CACHE_DIR", None)
    else:
        os.environ["RUBRICTOOLS_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def srv():
    with FakeLLMServer() as s:
        yield s


@pytest.fixture
def rubric():
    return rt.Rubric.from_dict(
        [
            {"name": "good", "requirement": "The answer is good"},
            {"name": "short", "requirement": "At most 3 words", "rule": {"max_words": 3}},
            {"name": "rude", "weight": -5, "requirement": "The answer is rude"},
        ]
    )


@pytest.fixture
def answers():
    return pl.DataFrame(
        {
            "qid": [f"q{i:03d}" for i in range(60)],
            "text": [f"{'good' if i % 3 else 'poor'} answer number {i}" for i in range(60)],
        }
    )


def _script(request):
    if submission_text(request).endswith("number 7"):
        return Reply(status=400)  # one submission always fails
    return default_script(request)


def test_ray_grade_matches_local_grading_and_limits_cluster_concurrency(cluster, srv, rubric, answers, tmp_path):
    srv.reset()
    srv.script, srv.latency = _script, 0.02
    limiter = rt.ray.make_limiter(3)
    lf = rt.ray.grade(
        answers,
        rubric,
        model=rt.Judge(model=MODEL, api_base=srv.url, api_key=SECRET, backoff_base=0.01),
        column="text",
        id_column="qid",
        output=tmp_path / "out",
        batch_size=10,
        concurrency=3,
        limiter=limiter,
    )
    assert isinstance(lf, pl.LazyFrame)
    v = lf.collect().sort("id", "criterion")
    assert srv.hits == 120  # 60 x 2 judged criteria; the rule criterion is never sent
    stats = ray.get(limiter.stats.remote())
    assert stats["peak"] <= 3 and srv.peak_in_flight <= 3 and stats["free"] == 3
    sent_by_ray = sorted(json.dumps(r, sort_keys=True) for r in srv.requests)
    srv.reset()
    srv.script, srv.latency = _script, 0.0
    local = rt.grade(
        answers,
        rubric,
        model=rt.Judge(model=MODEL, api_base=srv.url, api_key=SECRET, backoff_base=0.01),
        column="text",
        id_column="qid",
        cache=False,
        progress=False,
    ).sort("id", "criterion")
    assert v.select(COMPARE).equals(local.select(COMPARE))
    assert sent_by_ray == sorted(json.dumps(r, sort_keys=True) for r in srv.requests)  # the very same requests
    bad = v.filter(pl.col("id") == "q007", pl.col("judge") == MODEL)
    assert bad["error"].str.contains("400").all() and bad["verdict"].null_count() == 2
    # lazily scored and compared like any verdict table
    s = rt.score(lf, rubric).sort("id")
    assert s.height == 60 and s.select("id", "score").equals(rt.score(local, rubric).sort("id").select("id", "score"))
    human = local.filter(pl.col("error").is_null()).select("id", "criterion", pl.col("verdict").alias("label"))
    a = rt.agreement(lf, human, n_resamples=0, level="criterion")
    acc = a.filter(pl.col("metric") == "accuracy")
    assert set(acc["criterion"]) == {"good", "short", "rude"} and (acc["value"] == 1.0).all()
    for f in (tmp_path / "out").rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes()


def test_per_node_cache_resumes_without_repeating_calls(cluster, srv, rubric, answers, tmp_path):
    srv.reset()
    srv.script = default_script
    answers = answers.with_columns(pl.col("text") + " (resume test)")  # not in the node cache yet
    kw = dict(
        model=rt.Judge(model=MODEL, api_base=srv.url, api_key=SECRET), column="text", id_column="qid", batch_size=15
    )
    first = rt.ray.grade(answers, rubric, output=tmp_path / "out", **kw).collect()
    assert srv.hits == 120 and list((cluster / "ray").glob("node-*.sqlite"))
    with pytest.raises(ValueError, match="overwrite=True"):
        rt.ray.grade(answers, rubric, output=tmp_path / "out", **kw)
    again = rt.ray.grade(answers, rubric, output=tmp_path / "out", overwrite=True, **kw).collect()
    assert srv.hits == 120  # every answer came from the node's cache
    assert again.filter(pl.col("judge") == MODEL)["cached"].all()
    key = ["id", "criterion", "verdict"]
    assert again.select(key).sort(key).equals(first.select(key).sort(key))


def test_parquet_input_and_partitioned_output(cluster, srv, rubric, answers, tmp_path):
    srv.reset()
    srv.script = default_script
    src = tmp_path / "in"
    src.mkdir()
    answers.head(30).write_parquet(src / "a.parquet")
    answers.tail(30).write_parquet(src / "b.parquet")
    lf = rt.ray.grade(
        str(src),
        rubric,
        model=rt.Judge(model=MODEL, api_base=srv.url, api_key=SECRET),
        column="text",
        id_column="qid",
        output=tmp_path / "out",
        partition_by=["judge"],
        cache=tmp_path / "c.sqlite",
    )
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        f"judge={MODEL.replace('/', '%2F')}",
        "judge=rule",
    } or len(list((tmp_path / "out").iterdir())) == 2
    v = lf.collect()
    assert v.height == 180 and set(v["judge"]) == {MODEL, "rule"}


def test_bad_arguments(cluster, rubric, answers, tmp_path):
    with pytest.raises(ValueError, match="is not a column"):
        rt.ray.grade(answers, rubric, model=rt.ScriptedJudge(), column="nope", id_column="qid", output=tmp_path / "o")
    with pytest.raises(TypeError, match="batch"):  # provider batch jobs are rt.submit_batch's
        rt.ray.grade(answers, rubric, model=MODEL, column="text", id_column="qid", output=tmp_path / "o", batch=True)
    with pytest.raises(ValueError, match=">= 1"):
        rt.ray.grade(answers, rubric, model=MODEL, column="text", id_column="qid", output=tmp_path / "o", concurrency=0)

"""Streaming `grade_to_parquet(..., output=...)`: chunked parquet parts, flat memory, resumable."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import rubrictools as rt

from ..fake_server import Reply
from .test_grading import MODEL, SECRET, _reset, server  # noqa: F401 - module-scoped loopback server fixtures


@pytest.fixture
def source(tmp_path):
    df = pl.DataFrame(
        {"key": [f"k{i:04d}" for i in range(2500)], "text": [f"{'good' if i % 3 else 'bad'} {i}" for i in range(2500)]}
    )
    path = tmp_path / "in.parquet"
    df.write_parquet(path)
    return path, df


@pytest.fixture
def rubric():
    return rt.Rubric.from_dict(
        [{"name": "good", "requirement": "The answer is good"}, {"name": "short", "rule": {"max_words": 3}}]
    )


def test_parquet_source_is_graded_in_parts_in_order(source, rubric, tmp_path):
    path, df = source
    judge = rt.ScriptedJudge(rule=lambda t, c: "MET" if t.startswith("good") else "UNMET")
    out = rt.grade_to_parquet(
        path,
        rubric,
        model=judge,
        column="text",
        id_column="key",
        output=tmp_path / "v",
        batch_size=1000,
        progress=False,
    )
    assert isinstance(out, pl.LazyFrame)
    assert sorted(p.name for p in (tmp_path / "v").glob("part-*.parquet")) == [
        f"part-0000{i}.parquet" for i in range(3)
    ]
    v = out.collect()
    assert v.height == 5000 and v["id"].unique(maintain_order=True).to_list() == df["key"].to_list()
    assert v.filter(pl.col("criterion") == "good")["verdict"].to_list() == [
        "MET" if t.startswith("good") else "UNMET" for t in df["text"]
    ]
    s = rt.score(out, rubric)  # score reads the lazy scan
    assert s.height == 2500 and s["score"].mean() == pytest.approx(2 / 3 * 1.0 + 1 / 3 * 0.5, abs=1e-3)


def test_row_ids_are_global_without_an_id_column(rubric, tmp_path):
    lf = pl.LazyFrame({"submission": ["good"] * 25})
    out = rt.grade_to_parquet(
        lf,
        rubric,
        model=rt.ScriptedJudge(rule=lambda t, c: "MET"),
        output=tmp_path / "v",
        batch_size=10,
        progress=False,
    ).collect()
    assert out.filter(pl.col("criterion") == "good")["id"].to_list() == list(range(25))


def test_resume_skips_finished_parts_and_repeats_no_call(source, rubric, server, tmp_path):
    _, df = source
    path = tmp_path / "small.parquet"
    df.head(500).write_parquet(path)
    kw = dict(
        model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET, max_concurrency=64),
        column="text",
        id_column="key",
        output=tmp_path / "v",
        batch_size=200,
        progress=False,
    )
    rt.grade_to_parquet(path, rubric, cache=False, **kw)
    assert server.hits == 500  # one LLM criterion per row; the rule made no call
    (tmp_path / "v" / "part-00001.parquet").unlink()  # as if the run had died during part 1
    server.reset()
    out = rt.grade_to_parquet(path, rubric, cache=False, **kw).collect()
    assert server.hits == 200 and out.height == 1000  # only the missing part was graded again
    # with the response cache, even an unfinished part repeats no call
    server.reset()
    kw["output"] = tmp_path / "v2"
    rt.grade_to_parquet(path, rubric, cache=tmp_path / "c.sqlite", **kw)
    (tmp_path / "v2" / "part-00002.parquet").unlink()
    server.reset()
    rt.grade_to_parquet(path, rubric, cache=tmp_path / "c.sqlite", **kw)
    assert server.hits == 0
    assert SECRET not in json.dumps(json.loads((tmp_path / "v" / "_manifest.json").read_text()))


def test_mixing_settings_in_one_directory_is_refused(source, rubric, tmp_path):
    path, _ = source
    judge = rt.ScriptedJudge(rule=lambda t, c: "MET")
    rt.grade_to_parquet(
        path, rubric, model=judge, column="text", output=tmp_path / "v", batch_size=1000, progress=False
    )
    with pytest.raises(ValueError, match="graded with other settings"):
        rt.grade_to_parquet(
            path, rubric, model=judge, column="text", output=tmp_path / "v", batch_size=500, progress=False
        )
    other = rt.Rubric.from_dict([{"name": "good", "requirement": "Different words"}])
    with pytest.raises(ValueError, match="graded with other settings"):
        rt.grade_to_parquet(
            path, other, model=judge, column="text", output=tmp_path / "v", batch_size=1000, progress=False
        )
    (tmp_path / "w").mkdir()
    pl.DataFrame({"x": [1]}).write_parquet(tmp_path / "w" / "part-00000.parquet")
    with pytest.raises(ValueError, match=r"no _manifest.json"):
        rt.grade_to_parquet(path, rubric, model=judge, column="text", output=tmp_path / "w", progress=False)
    with pytest.raises(FileNotFoundError):
        rt.grade_to_parquet(tmp_path / "missing.parquet", rubric, model=judge, output=tmp_path / "x", progress=False)
    with pytest.raises(ValueError, match="column='nope'"):
        rt.grade_to_parquet(path, rubric, model=judge, column="nope", output=tmp_path / "y", progress=False)


def test_a_resume_regrades_exactly_the_failed_rows_of_finished_parts(rubric, server, tmp_path):
    path = tmp_path / "distinct.parquet"
    pl.DataFrame({"text": [f"answer {i} is {'good' if i % 2 else 'bad'}" for i in range(20)]}).write_parquet(path)
    kw = dict(
        model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET, backoff_base=0.01, max_retries=0),
        column="text",
        cache=tmp_path / "c.sqlite",
        output=tmp_path / "v",
        batch_size=4,
        progress=False,
    )
    server.faults.extend([Reply(status=500, body='{"error": {"message": "overloaded"}}')] * 5)
    first = rt.grade_to_parquet(path, rubric, **kw).collect()
    failed = first.filter(pl.col("error").is_not_null())
    assert failed.height == 5
    hits = server.hits
    again = rt.grade_to_parquet(path, rubric, **kw).collect()
    assert server.hits - hits == 5  # only the failed calls are asked again
    assert again["error"].null_count() == again.height
    assert again.select("id", "criterion").equals(first.select("id", "criterion"))  # same rows, same order
    assert not list((tmp_path / "v").glob("*.tmp"))


def test_a_manifest_half_written_by_a_crash_never_blocks_a_rerun(source, rubric, tmp_path, monkeypatch):
    path, _ = source
    judge = rt.ScriptedJudge(rule=lambda t, c: "MET")
    real = Path.write_text

    def crash(self, data, *a, **k):  # the disk fills up half way through the write
        real(self, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", crash)
    with pytest.raises(OSError):
        rt.grade_to_parquet(path, rubric, model=judge, column="text", output=tmp_path / "v", progress=False)
    monkeypatch.setattr(Path, "write_text", real)
    v = rt.grade_to_parquet(path, rubric, model=judge, column="text", output=tmp_path / "v", progress=False).collect()
    # every row once, in order (a rerun that appended to what the crash left would repeat rows)
    assert v.height == 5000 and not v.select("id", "criterion").is_duplicated().any()
    assert v["id"].unique(maintain_order=True).to_list() == list(range(2500))
    assert v.filter(pl.col("criterion") == "good")["verdict"].to_list() == ["MET"] * 2500


def test_an_unreadable_manifest_gets_an_error_naming_it(source, rubric, tmp_path):
    path, _ = source
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "_manifest.json").write_text("")
    with pytest.raises(ValueError, match=r"_manifest.json is unreadable"):
        rt.grade_to_parquet(
            path, rubric, model=rt.ScriptedJudge(), column="text", output=tmp_path / "v", progress=False
        )


def test_round_two_examples_sampling_and_judge_settings_are_part_of_a_directorys_settings(source, rubric, tmp_path):
    """Before: resuming with other few-shot examples, distribution=True or another temperature wrote
    parts graded two ways into one table (or a scan that failed on its schema)."""
    from rubrictools.grading.options import GradeOptions
    from rubrictools.grading.streaming import _fingerprint

    judge = rt.Judge(model="openai/gpt-4.1-mini", api_key="sk-one")
    base = GradeOptions(model=judge, column="text")
    fp = _fingerprint(rubric, base, 1000)
    examples = pl.DataFrame({"submission": ["hi"], "criterion": ["good"], "verdict": ["MET"]})
    for changed in (
        GradeOptions(model=judge, column="text", examples=examples),
        GradeOptions(model=judge, column="text", distribution=True),
        GradeOptions(model=rt.Judge(model="openai/gpt-4.1-mini", api_key="sk-one", temperature=0.7), column="text"),
        GradeOptions(model=judge, column="text", image_column="photo"),
    ):
        assert _fingerprint(rubric, changed, 1000) != fp
    same_key_changed = GradeOptions(model=rt.Judge(model="openai/gpt-4.1-mini", api_key="sk-two"), column="text")
    assert _fingerprint(rubric, same_key_changed, 1000) == fp  # a new API key is the same run

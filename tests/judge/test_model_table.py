"""A judge on a local server never waits for litellm's import: the direct path reads litellm's
bundled model table to see that litellm knows nothing of the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from rubrictools.judge import model_table

GRADE_TWO_ROWS = textwrap.dedent("""
    import json, sys
    import polars as pl, rubrictools as rt
    from rubrictools.testing import FakeLLMServer
    with FakeLLMServer() as srv:
        rubric = rt.Rubric.from_dict([{"name": "x", "requirement": "good?"}])
        judge = rt.Judge(model=sys.argv[1], api_base=srv.url, api_key="sk-local")
        v = rt.grade(pl.DataFrame({"a": ["good", "bad"]}), rubric, column="a", model=judge, progress=False, cache=False)
    loaded = sorted(m for m in sys.modules if m == "litellm" or m.startswith("litellm."))
    errors = v["error"].drop_nulls().len()
    print(json.dumps({"verdicts": v["verdict"].to_list(), "errors": errors, "litellm": loaded[:3]}))
""")


def run(model: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}  # as a user's shell
    out = subprocess.run(
        [sys.executable, "-c", GRADE_TWO_ROWS, model], env=env, capture_output=True, text=True, timeout=600, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_fresh_process_grading_on_a_local_server_imports_no_litellm_module():
    found = run("openai/smollm2")
    assert found == {"verdicts": ["MET", "UNMET"], "errors": 0, "litellm": []}


def test_a_priced_model_grades_without_litellm_at_litellm_prices():
    """Before: a priced name (openai/gpt-4.1-mini) imported litellm to look up its price (2.5-3.6 s cold)."""
    found = run("openai/gpt-4.1-mini")
    assert found == {"verdicts": ["MET", "UNMET"], "errors": 0, "litellm": []}


SAME_AS_LITELLM = textwrap.dedent("""
    import json
    from rubrictools.judge import pricing, providers, dialects
    from rubrictools.judge.config import Judge
    models = ["openai/gpt-4.1-mini", "gpt-4.1", "openai/o3-mini", "openai/gpt-4o",
              "anthropic/claude-3-5-haiku-20241022"]
    def ask():
        providers.reasoning_model.cache_clear(); pricing.PRICES.clear()
        return {m: [pricing.unit_prices(m), pricing.context_window(m), providers.reasoning_model(m),
                    dialects.static_dialect(Judge(model=m)), pricing.takes_images(m)] for m in models}
    before = ask()
    import litellm  # now everything comes from litellm itself
    print(json.dumps({"before": before, "after": ask()}))
""")


def test_what_is_read_without_litellm_is_what_litellm_says():
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # litellm's own copy of the same table, offline
    out = subprocess.run([sys.executable, "-c", SAME_AS_LITELLM], env=env, capture_output=True, text=True,
                         timeout=600, check=True)  # fmt: skip
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] == got["after"]
    assert got["before"]["openai/gpt-4.1-mini"][0] is not None  # priced


@pytest.mark.parametrize(
    ("model", "may_know"),
    [
        ("openai/smollm2", False),
        ("hosted_vllm/my-finetune", False),
        ("openai/gpt-4.1-mini", True),
        ("gpt-4.1-mini", True),  # no prefix: litellm's own resolution
        ("anthropic/claude-whatever", True),
        ("ollama/llama3.2", True),
    ],
)
def test_which_models_may_skip_litellm(model, may_know, monkeypatch):
    monkeypatch.delitem(sys.modules, "litellm", raising=False)
    assert model_table.litellm_may_know(model) is may_know


def test_once_litellm_is_imported_a_registered_price_is_found():
    from rubrictools.judge import pricing
    from rubrictools.judge.providers import load_litellm

    model = "openai/rt-test-registered-local"
    load_litellm().register_model(
        {model: {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "litellm_provider": "openai"}}
    )
    pricing.PRICES.pop(model, None)
    assert pricing.unit_prices(model) == pytest.approx((1e-6, 2e-6))


def test_the_bundled_table_is_litellms_own():
    from rubrictools.judge.providers import load_litellm

    table = model_table.bundled_models()
    assert table is not None and "gpt-4.1-mini" in table
    loaded = set(load_litellm().model_cost)  # the table litellm loads (no remote fetch) ...
    assert table <= loaded and len(loaded - table) < 20  # ... plus models registered by tests


def test_a_price_registered_after_a_miss_is_found():
    """The unknown-price warning says to call litellm.register_model: doing so must work even
    after rubrictools already looked the model up and found no price."""
    from rubrictools.judge import pricing
    from rubrictools.judge.providers import load_litellm

    model = "openai/rt-test-late-registered"
    load_litellm()  # litellm imported: it is asked, and has no price yet
    assert pricing.unit_prices(model) is None
    assert pricing.unit_prices(model) is None  # remembered while litellm's table is unchanged
    load_litellm().register_model(
        {model: {"input_cost_per_token": 3e-6, "output_cost_per_token": 4e-6, "litellm_provider": "openai"}}
    )
    assert pricing.unit_prices(model) == pytest.approx((3e-6, 4e-6))

"""Few-shot examples in per-item mode: each criterion's examples under it, escaped, in the request sent."""

from __future__ import annotations

import polars as pl

import rubrictools as rt
from rubrictools.testing.scripts import user_text

from .test_grading import MODEL, SECRET, server  # noqa: F401 - shared fixture


def test_per_item_requests_show_each_criterions_examples(server, tmp_path):
    rubric = rt.Rubric.from_dict(
        [{"name": "polite", "requirement": "Is polite"}, {"name": "short", "requirement": "Under 20 words"}]
    )
    ex = pl.DataFrame(
        {
            "submission": ["Thanks so much!", "<b>Go away</b>"],
            "criterion": ["polite", "polite"],
            "verdict": ["MET", "UNMET"],
            "explanation": ["thanks", "rude"],
        }
    )
    before = len(server.requests)
    plain = rt.prompts(
        pl.DataFrame({"submission": ["hi"]}), rubric, model=rt.Judge(model=MODEL, api_base=server.url), mode="per_item"
    )
    v = rt.grade(
        pl.DataFrame({"submission": ["good day"]}),
        rubric,
        model=rt.Judge(model=MODEL, api_base=server.url, api_key=SECRET),
        mode="per_item",
        examples=ex,
        cache=False,
        progress=False,
        record=False,
    )
    assert v["error"].null_count() == 2
    text = user_text(server.requests[before])
    polite, short = text.index("[1]"), text.index("[2]")
    shots = text.index("Labelled examples for this criterion")
    assert polite < shots < short  # under the criterion they label, not under the other one
    assert "&lt;b&gt;Go away&lt;/b&gt;" in text and "verdict: UNMET" in text
    assert "Labelled examples" not in plain["user"][0]  # without examples: the same requests as before

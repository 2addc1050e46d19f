"""grade(..., distribution=True): label probabilities from logprobs, or from samples, cached."""

from __future__ import annotations

import json

import polars as pl
import pytest

import rubrictools as rt

from ..fake_server import Reply, criterion_name, default_script, submission_text
from .test_grading import _reset, run, server  # noqa: F401 - the loopback server fixtures and grading helper

RUBRIC = rt.Rubric.from_dict(
    [
        {"name": "good", "requirement": "The answer is good"},
        {
            "name": "tone",
            "weight": 5,
            "requirement": "Tone",
            "options": [
                {"label": "warm", "value": 1.0},
                {"label": "wary", "value": 0.5},
                {"label": "cold", "value": 0.0},
            ],
        },
    ]
)  # "warm"/"wary" share a first letter: the logprob path must refuse to split them


DF = pl.DataFrame({"qid": ["a", "b"], "text": ["good one", "meh"]})


def _dist(row: dict) -> dict[str, float]:
    return {d["label"]: d["prob"] for d in row["distribution"]}


def test_logprobs_give_the_distribution(server, tmp_path) -> None:
    def script(req):
        if criterion_name(req) == "tone":
            # "wa" could begin "warm" or "wary": logprobs cannot split it, so the engine samples
            return Reply(
                content=json.dumps({"verdict": "cold", "explanation": "x"}),
                label_probs={"cold": 0.5, "wa": 0.5},
                samples=[json.dumps({"verdict": v, "explanation": "s"}) for v in ("cold", "cold", "wary", "warm")],
            )
        verdict = "MET" if "good" in submission_text(req) else "UNMET"
        probs = {"MET": 0.8, "UNMET": 0.2} if verdict == "MET" else {"UNMET": 0.6, "MET": 0.3, "CANNOT": 0.1}
        return Reply(content=json.dumps({"verdict": verdict, "explanation": "x"}), label_probs=probs)

    server.script = script
    v = run(DF, RUBRIC, server, tmp_path, distribution=True, distribution_samples=4)
    good = v.filter(pl.col("criterion") == "good").sort("id")
    a, b = good.row(0, named=True), good.row(1, named=True)
    assert a["distribution_source"] == "logprobs" and _dist(a) == pytest.approx(
        {"MET": 0.8, "UNMET": 0.2, "CANNOT_ASSESS": 0.0}
    )
    assert _dist(b) == pytest.approx({"MET": 0.3, "UNMET": 0.6, "CANNOT_ASSESS": 0.1})
    # every first request asked for logprobs; the sampling follow-ups asked for n answers instead
    assert all(r.get("logprobs") is True and r.get("top_logprobs") == 20 for r in server.requests if "n" not in r)
    tone = v.filter(pl.col("criterion") == "tone").row(0, named=True)
    # ambiguous alternatives at the verdict token: the engine sampled 4 answers at temperature 1
    assert tone["distribution_source"] == "samples:4"
    assert _dist(tone) == pytest.approx({"warm": 0.25, "wary": 0.25, "cold": 0.5})
    sampled = [r for r in server.requests if r.get("n") == 4]
    assert len(sampled) == 2 and all(r["temperature"] == 1.0 for r in sampled)
    # the sampling call is paid for: its tokens are in the row
    assert tone["prompt_tokens"] > v.filter(pl.col("criterion") == "good")["prompt_tokens"].min()


def test_cached_distributions_make_no_calls(server, tmp_path) -> None:
    server.script = lambda req: Reply(
        content=json.dumps({"verdict": "MET", "explanation": "x"}), label_probs={"MET": 0.9, "UNMET": 0.1}
    )
    rub = rt.Rubric.from_dict([{"name": "good", "requirement": "x"}])
    first = run(DF, rub, server, tmp_path, distribution=True)
    n = server.hits
    again = run(DF, rub, server, tmp_path, distribution=True)
    assert server.hits == n and again["cached"].all()
    assert again["distribution"].to_list() == first["distribution"].to_list()
    # a plain run does not reuse distribution answers, and vice versa: different requests
    plain = run(DF, rub, server, tmp_path)
    assert "distribution" not in plain.columns and server.hits == n + 2


def test_no_logprobs_and_no_sampling_is_explicit(server, tmp_path) -> None:
    rub = rt.Rubric.from_dict(
        [
            {
                "name": "tone",
                "requirement": "x",
                "options": [{"label": "warm", "value": 1.0}, {"label": "wary", "value": 0.0}],
            }
        ]
    )
    server.script = lambda req: Reply(content=json.dumps({"verdict": "warm", "explanation": "x"}), no_logprobs=True)
    v = run(DF, rub, server, tmp_path, distribution=True, distribution_samples=0)
    assert v["distribution_source"].to_list() == ["unavailable", "unavailable"]
    assert v["distribution"].null_count() == 2 and v["verdict"].to_list() == [
        "warm",
        "warm",
    ]  # the verdict itself stands


def test_a_certain_answer_is_a_one_hot_distribution(server, tmp_path) -> None:
    server.script = default_script  # the verdict token's only alternative is itself (logprob 0)
    rub = rt.Rubric.from_dict([{"name": "good", "requirement": "x"}])
    v = run(DF, rub, server, tmp_path, distribution=True)
    assert v["distribution_source"].to_list() == ["logprobs", "logprobs"]
    assert _dist(v.row(0, named=True))["MET"] == 1.0 and _dist(v.row(1, named=True))["UNMET"] == 1.0


def test_scripted_judge_gives_one_hot_and_modes_are_checked(tmp_path) -> None:
    rub = rt.Rubric.from_dict([{"name": "good", "requirement": "x"}])
    judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "good" in text else "UNMET")
    v = rt.grade(DF, rub, model=judge, column="text", id_column="qid", distribution=True, progress=False, cache=False)
    assert v["distribution_source"].unique().to_list() == ["scripted"]
    assert _dist(v.row(0, named=True)) == {"MET": 1.0, "UNMET": 0.0, "CANNOT_ASSESS": 0.0}
    with pytest.raises(ValueError, match="per_criterion"):
        rt.grade(
            DF,
            rub,
            model=judge,
            column="text",
            id_column="qid",
            distribution=True,
            mode="per_item",
            progress=False,
            cache=False,
        )


def test_distributions_feed_the_calibrator(server, tmp_path) -> None:
    server.script = lambda req: Reply(
        content=json.dumps({"verdict": "MET", "explanation": "x"}),
        label_probs={"MET": 0.9, "UNMET": 0.1} if "good" in submission_text(req) else {"MET": 0.4, "UNMET": 0.6},
    )
    rub = rt.Rubric.from_dict([{"name": "good", "requirement": "x"}])
    df = pl.DataFrame({"qid": [f"s{i}" for i in range(40)], "text": ["good" if i % 2 else "meh" for i in range(40)]})
    v = run(df, rub, server, tmp_path, distribution=True)
    dists = rt.calibrate.distributions_from_verdicts(v)
    assert dists.columns == ["id", "criterion", "label", "prob"] and dists.height == 120
    human = pl.DataFrame(
        {"id": df["qid"], "criterion": "good", "rater": "h", "label": ["MET" if i % 2 else "UNMET" for i in range(40)]}
    )
    cal = rt.calibrate.fit(dists, human, target="good", model="isotonic")
    p = cal.predict(dists).sort("id")
    assert p.filter(pl.col("id") == "s1")["p_MET"].item() == pytest.approx(1.0)
    assert p.filter(pl.col("id") == "s0")["p_MET"].item() == pytest.approx(0.0)

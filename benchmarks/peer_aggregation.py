"""Scoring and ensemble aggregation side by side with the peers, on the same random inputs.

Run: python benchmarks/peer_aggregation.py [--rubrics 5000] [--items 20000] [--criteria 5]
Needs the [peers] extra (autorubric, rubric); a peer that is not installed is left out.

* scoring: ``--rubrics`` random per-item rubrics (2-6 criteria, binary and multi-choice, weights
  of either sign), each with one set of verdicts: one ``rt.score`` call over the whole verdict
  table against autorubric's ``Rubric.compute_score`` and ``rubric``'s per-criterion
  ``aggregate`` called once per rubric (binary rubrics for ``rubric``, which has no options);
* ensembles: ``--items`` submissions x ``--criteria`` ordinal criteria with 3 judges each, the
  mean ensemble under autorubric's rules: one ``rt.ensemble`` call against autorubric's
  aggregator once per (submission, criterion), as its grader calls it.

Every pair of results is checked equal before any time is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import time
from typing import Any

import numpy as np
import polars as pl

import rubrictools as rt

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _spec(rng: np.random.Generator, binary: bool) -> list[dict[str, Any]]:
    out = []
    for j in range(int(rng.integers(2, 7))):
        c: dict[str, Any] = {
            "name": f"c{j}",
            "weight": float(rng.choice([-1, 1]) * rng.integers(1, 21)),
            "requirement": "r",
        }
        if not binary and rng.random() < 0.5:
            values = np.round(rng.random(int(rng.integers(2, 6))), 2)
            c["options"] = [{"label": f"o{i}", "value": float(v)} for i, v in enumerate(values)]
        out.append(c)
    out[0]["weight"] = abs(out[0]["weight"])  # never all zero
    return out


def _labels(rng: np.random.Generator, spec: list[dict[str, Any]]) -> list[str]:
    return [
        str(rng.choice([o["label"] for o in c["options"]])) if "options" in c else str(rng.choice(["MET", "UNMET"]))
        for c in spec
    ]


def _time(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def scoring(n: int) -> None:
    rng = np.random.default_rng(0)
    specs = [_spec(rng, binary=i % 2 == 0) for i in range(n)]
    labels = [_labels(rng, s) for s in specs]
    rubrics = [rt.Rubric.from_dict(s) for s in specs]
    rows = [
        (i, c.name, lab, c.value_of(lab), c.weight, c.worst_value)
        for i, (r, labs) in enumerate(zip(rubrics, labels, strict=True))
        for c, lab in zip(r, labs, strict=True)
    ]
    table = pl.DataFrame(rows, schema=["id", "criterion", "verdict", "value", "weight", "worst_value"], orient="row")
    ours_s, ours = _time(lambda: rt.score(table)["score"].to_list())
    print(f"scoring {n:,} rubrics ({table.height:,} verdict rows)")
    print(f"  rubrictools rt.score, one call        {ours_s * 1000:9.1f} ms")
    try:
        import autorubric as ar
    except ImportError:
        print("  autorubric not installed")
    else:
        theirs_rubrics = [ar.Rubric.from_dict(s) for s in specs]
        t, theirs = _time(lambda: [r.compute_score(lab) for r, lab in zip(theirs_rubrics, labels, strict=True)])
        assert all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(ours, theirs, strict=True))
        print(f"  autorubric compute_score, per rubric  {t * 1000:9.1f} ms  ({t / ours_s:.1f}x rubrictools)")
    try:
        from rubric.autograders import PerCriterionGrader
        from rubric.types import CriterionReport
    except ImportError:
        print("  rubric not installed")
        return
    binary = [i for i, s in enumerate(specs) if all("options" not in c for c in s)]
    reports = [
        [
            CriterionReport(weight=c["weight"], requirement="r", verdict=lab, reason="")
            for c, lab in zip(specs[i], labels[i], strict=True)
        ]
        for i in binary
    ]
    grader = PerCriterionGrader(generate_fn=None)

    async def run() -> list[float]:
        return [(await grader.aggregate(r)).score for r in reports]

    sub = table.filter(pl.col("id").is_in(binary))
    ours_b, ours_scores = _time(lambda: rt.score(sub)["score"].to_list())
    t, theirs_b = _time(lambda: asyncio.run(run()))
    assert all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(ours_scores, theirs_b, strict=True))
    print(
        f"  ({len(binary):,} binary rubrics) rubrictools {ours_b * 1000:.1f} ms, rubric aggregate {t * 1000:.1f} ms"
        f"  ({t / ours_b:.1f}x rubrictools)"
    )


def ensembles(n_items: int, n_criteria: int) -> None:
    try:
        import autorubric as ar
        from autorubric.graders import CriterionGrader
        from autorubric.types import MultiChoiceJudgeVote
    except ImportError:
        print("ensembles: autorubric not installed")
        return
    rng = np.random.default_rng(1)
    opts = [{"label": str(k), "value": k / 4} for k in range(5)]
    names = [f"c{j}" for j in range(n_criteria)]
    specs = [{"name": c, "weight": 1.0, "requirement": "r", "options": opts, "scale_type": "ordinal"} for c in names]
    n = n_items * n_criteria
    votes = pl.DataFrame(
        {
            "id": np.repeat(np.arange(n_items), 3 * n_criteria),
            "criterion": np.tile(np.repeat(names, 3), n_items),
            "verdict": rng.integers(0, 5, 3 * n).astype(str),
            "judge": np.tile(["a", "b", "c"], n),
        }
    )
    rubric = rt.Rubric.from_dict(specs)
    ours_s, ours = _time(
        lambda: rt.ensemble(votes, rubric, method="mean", abstentions="drop", snap="option")["verdict"].to_list()
    )
    grader = CriterionGrader(judge_model_config=ar.LLMConfig(model="openai/gpt-4.1-mini"), ordinal_aggregation="mean")
    crit = ar.Criterion.model_validate(specs[0])
    labels = votes["verdict"].to_list()

    def theirs() -> list[str]:
        out = []
        for i in range(n):
            vs = [
                MultiChoiceJudgeVote(
                    judge_id=j, selected_index=int(lab), selected_label=lab, value=int(lab) / 4, reason=""
                )
                for j, lab in zip("abc", labels[3 * i : 3 * i + 3], strict=True)
            ]
            out.append(grader._aggregate_multi_choice_votes(vs, crit)[0].selected_label)  # private: pinned 1.6.1
        return out

    t, their_labels = _time(theirs)
    assert ours == their_labels
    print(f"ensembles: mean of 3 judges, {n_items:,} items x {n_criteria} ordinal criteria (autorubric's rules)")
    print(f"  rubrictools rt.ensemble, one call     {ours_s * 1000:9.1f} ms")
    print(f"  autorubric aggregator, per criterion  {t * 1000:9.1f} ms  ({t / ours_s:.1f}x rubrictools)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rubrics", type=int, default=5000)
    ap.add_argument("--items", type=int, default=20000)
    ap.add_argument("--criteria", type=int, default=5)
    args = ap.parse_args()
    scoring(args.rubrics)
    ensembles(args.items, args.criteria)


if __name__ == "__main__":
    main()

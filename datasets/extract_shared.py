"""Extract the numeric parts of public evaluation sets into compact files under datasets/.

Reads ``../shared/datasets`` (or ``--shared PATH``) and writes, per source, parquet files
with ids, human ratings per rater and recorded LLM-judge outputs, plus a ``CARD.json``
(origin, commit, licence, citation, what the labels mean). No third-party text (dialogues,
stories, instructions, model outputs) is written: only numbers and ids.

    python datasets/extract_shared.py            # re-create datasets/{llmbar,hanna,llm_rubric}
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import re
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
LLMBAR_SUBSETS = ("Natural", "Adversarial_Neighbor", "Adversarial_GPTInst", "Adversarial_GPTOut", "Adversarial_Manual",
                  "FairEval", "LLMEval_2", "MT-Bench")  # fmt: skip
SWAPS = ("swap = False", "swap = True")  # GPT-4's two presentation orders in LLMBar's result.json
LLMBAR_STRATEGIES = ("Vanilla_NoRules", "Metrics_Reference")
HANNA_CRITERIA = {
    "RE": "relevance",
    "CH": "coherence",
    "EM": "empathy",
    "SU": "surprise",
    "EG": "engagement",
    "CX": "complexity",
}


def _write(df: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    df.write_parquet(path, compression="zstd", statistics=False)
    print(f"  {path.relative_to(HERE)}: {df.height} rows")


def _card(path: Path, card: dict) -> None:
    path.write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n")


def _parse_stat(v: object) -> float:
    """LLMBar statistics: '92 / 100 = 92.0%' -> 0.92; '93.5%' -> 0.935; floats unchanged."""
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).split("=")[-1].strip()
    return float(s.rstrip("%")) / 100 if s.endswith("%") else float(s)


def llmbar(shared: Path) -> None:
    src = shared / "llmbar"
    rows = []
    published = {}
    for subset in LLMBAR_SUBSETS:
        for strategy in LLMBAR_STRATEGIES:
            d = src / subset / f"gpt4_{strategy}"
            if not (d / "result.json").exists():
                continue
            for i, item in enumerate(json.loads((d / "result.json").read_text())):
                last = item["results"][-1]
                wins = [None if last[k]["winner"] is None else int(last[k]["winner"]) for k in SWAPS]
                rows.append((subset, i, int(item["label"]), f"gpt4/{strategy}", *wins))
            stats = json.loads((d / "statistics.json").read_text())
            published[f"{subset}/gpt4/{strategy}"] = {k: _parse_stat(v) for k, v in stats.items()}
    df = pl.DataFrame(rows, schema={"subset": pl.String, "item": pl.Int64, "label": pl.Int64, "judge": pl.String,
                                    "winner_original_order": pl.Int64, "winner_swapped_order": pl.Int64}, orient="row")  # fmt: skip
    out = HERE / "llmbar"
    _write(df, out / "judgments.parquet")
    (out / "published.json").write_text(json.dumps(published, indent=1) + "\n")
    _card(out / "CARD.json", {
        "name": "llmbar",
        "title": "LLMBar: pairwise instruction-following judgments with GPT-4 in both orders",
        "origin": "https://github.com/princeton-nlp/LLMBar (commit 900616bff90b6c6c8e1681f7d079250637c55992)",
        "licence": "MIT (Copyright (c) 2023 Princeton Natural Language Processing); the FairEval, LLMEval_2 and MT-Bench subsets re-sample third-party human judgments: check their licences before redistribution",
        "citation": "Zeng, Z., Yu, J., Gao, T., Meng, Y., Goyal, T., Chen, D. (2024). Evaluating Large Language Models at Evaluating Instruction Following. ICLR 2024.",
        "contents": "judgments.parquet: one row per (subset, item, judge): the gold label (1 or 2: which output follows the instruction better, from human annotation) and GPT-4's winner when the outputs were shown in the original order and when swapped (already mapped back to the original numbering; null when GPT-4 gave no valid answer). published.json: the repository's statistics per subset and strategy (accuracy in each order, both correct, positional agreement 'equal').",
        "labels": "label / winner_*: 1 = output_1 is better, 2 = output_2 is better",
        "not_included": "instructions and outputs (text); load them from the LLMBar repository with rubrictools.datasets.load('llmbar', text_path=...)",
        "extracted_by": "datasets/extract_shared.py",
    })  # fmt: skip


def hanna(shared: Path) -> None:
    csv.field_size_limit(10**9)
    with open(shared / "hanna" / "hanna_metric_scores_llm.csv", newline="") as fh:
        table = list(csv.reader(fh))
    header, body = table[0], table[1:]
    human_rows, llm_rows = [], []
    pat_h = re.compile(r"^Human (\d) (RE|CH|EM|SU|EG|CX)$")
    pat_l = re.compile(r"^(.*) (RE|CH|EM|SU|EG|CX) (\d)$")
    for row in body:
        system = row[0]
        for col, cell in zip(header[1:], row[1:], strict=False):
            mh, ml = pat_h.match(col), pat_l.match(col)
            if not (mh or ml):
                continue
            values = ast.literal_eval(cell)
            for story, value in enumerate(values):
                sid = f"{system}/{story}"
                if mh:
                    human_rows.append(
                        (sid, system, story, HANNA_CRITERIA[mh.group(2)], f"human{mh.group(1)}", round(value))
                    )
                elif ml and ml.group(1) != "Human":
                    llm_rows.append((sid, HANNA_CRITERIA[ml.group(2)], ml.group(1), int(ml.group(3)), float(value)))
    human = pl.DataFrame(human_rows, schema={"id": pl.String, "system": pl.String, "story": pl.Int64, "criterion": pl.String,
                                              "rater": pl.String, "label": pl.Int64}, orient="row")  # fmt: skip
    llm = pl.DataFrame(llm_rows, schema={"id": pl.String, "criterion": pl.String, "model": pl.String, "prompt": pl.Int64,
                                          "rating": pl.Float64}, orient="row")  # fmt: skip
    out = HERE / "hanna"
    _write(human, out / "human.parquet")
    _write(llm, out / "llm.parquet")
    _card(out / "CARD.json", {
        "name": "hanna",
        "title": "HANNA: 1,056 stories (960 generated, 96 written by people) rated by 3 humans on 6 criteria, with LLM ratings",
        "origin": "https://github.com/dig-team/hanna-benchmark-asg (commit 282f27536a5d05ad4ce14298abcd70c45668fed2), file hanna_metric_scores_llm.csv",
        "licence": "MIT (Copyright (c) 2022 dig-team); stories derive from WritingPrompts",
        "citation": "Chhun, C., Colombo, P., Suchanek, F., Clavel, C. (2022). Of Human Criteria and Automatic Metrics: A Benchmark of the Evaluation of Story Generation. COLING 2022. LLM ratings: Chhun, C., Suchanek, F., Clavel, C. (2024). Do Language Models Enjoy Their Own Stories? Prompting Large Language Models for Automatic Story Evaluation. TACL.",
        "contents": "human.parquet: id = '<system>/<story index>', the story's 3 human ratings per criterion (rater human1..3: rater slots, not persistent people). llm.parquet: LLM rating per story and criterion for 5 models x 4 evaluation prompts; each value is the mean of 3 LLM runs (so thirds, not integers). About 1% of values are below 1 (down to -1): runs without a valid answer were coded <= 0 upstream and averaged in; rubrictools.datasets.load('hanna') turns values below 1 into judge-error rows.",
        "labels": "1-5 Likert per criterion: relevance (to the prompt), coherence, empathy, surprise, engagement, complexity",
        "not_included": "story texts and prompts",
        "extracted_by": "datasets/extract_shared.py",
    })  # fmt: skip


def llm_rubric(shared: Path) -> None:
    src = shared / "llm_rubric"
    out = HERE / "llm_rubric"
    for part in ("real", "synth"):
        d = src / "data" / f"{part}_data"
        hfile = "human_judges_real_convs_FIXED_ANON.tsv" if part == "real" else "human_judges_synth_all_FIXED_ANON.tsv"
        h = pl.read_csv(d / hfile, separator="\t", schema_overrides={"text_id": pl.String, "annotator_id": pl.String})
        qs = [c for c in h.columns if re.fullmatch(r"Q\d", c)]
        if "dialogue_system" not in h.columns:  # synthetic data: no system column
            h = h.with_columns(pl.lit(None, dtype=pl.Int64).alias("dialogue_system"))
        long = h.unpivot(
            index=["text_id", "annotator_id", "dialogue_system"], on=qs, variable_name="criterion", value_name="rating"
        )
        long = long.with_columns(
            pl.col("rating").cast(pl.Float64).round().cast(pl.Int64), pl.col("dialogue_system").cast(pl.Int64)
        )
        long = long.sort("text_id", "annotator_id", "criterion")
        _write(long, out / f"{part}_human.parquet")
        ev = pl.read_csv(
            d / f"gpt-3.5-turbo-16k_{part}_evaluations_FIXED.tsv",
            separator="\t",
            schema_overrides={"text_id": pl.String},
        )
        ev = ev.select("text_id", "criterion", pl.col("sample_llm").cast(pl.Int64).alias("sample"),
                       *[pl.col(f"answer{k}_prob").alias(f"p{k}") for k in range(1, 5)]).sort("text_id", "criterion")  # fmt: skip
        _write(ev, out / f"{part}_gpt35.parquet")
    pdir = src / "experiments" / "real_data" / "predictions"
    keys = ["text_id", "annotator_id", "dialogue_system", "criterion"]

    def read(f: str) -> pl.DataFrame:
        return pl.read_csv(pdir / f, separator="\t", schema_overrides={"text_id": pl.String, "annotator_id": pl.String})

    base = (
        read("real_convs_machine_baselines.tsv")
        .join(read("real_convs_human_baselines.tsv"), on=keys)
        .join(read("real_convs_random_baseline.tsv"), on=keys)
    )
    _write(base.sort(keys), out / "real_baselines.parquet")
    _card(out / "CARD.json", {
        "name": "llm_rubric",
        "title": "LLM-Rubric: GPT-3.5 answer distributions on 9 rubric questions and human raters' ratings of dialogues",
        "origin": "https://github.com/microsoft/LLM-Rubric (commit 70d56fc4e9a26e60642bc14b62b96d2d0a500edd)",
        "licence": "MIT (Copyright (c) Microsoft Corporation)",
        "citation": "Hashemi, H., Eisner, J., Rosset, C., Van Durme, B., Kedzie, C. (2024). LLM-Rubric: A Multidimensional, Calibrated Approach to Automated Evaluation of Natural Language Texts. ACL 2024.",
        "contents": "{real,synth}_human.parquet: one row per (dialogue, rater, question) with the rater's rating. {real,synth}_gpt35.parquet: GPT-3.5's probability for each of the 4 answers (p1..p4) per (dialogue, question) and one sampled answer. real_baselines.parquet: the repository's shipped baseline predictions per (dialogue, rater, question): sample_llm, argmax_llm, expected_llm, group_constant, ann_constant, random.",
        "labels": "Q1..Q8: rubric questions (naturalness, relevance, ... of a help-desk dialogue), Q0: overall satisfaction; ratings 1-4, 0 = not applicable. Real data: 223 dialogues, one rater each (13 raters; the paper calls its raters judges); synthetic: 250 dialogues, 2-3 raters each (24 raters).",
        "not_included": "dialogue texts (real_data.json)",
        "extracted_by": "datasets/extract_shared.py",
    })  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "datasets")
    a = ap.parse_args()
    for fn in (llmbar, hanna, llm_rubric):
        print(fn.__name__)
        fn(a.shared)


if __name__ == "__main__":
    main()

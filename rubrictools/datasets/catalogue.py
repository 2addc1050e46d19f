"""The dataset catalogue: the project's demo sets and numeric extracts of public evaluation
data, loaded as :class:`Dataset` (see :mod:`rubrictools.datasets`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.datasets.chat import CONVERSATION_DTYPE
from rubrictools.datasets.dataset import Dataset
from rubrictools.judge.tasks import PAIR_VALUES
from rubrictools.rubric import Rubric

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.rubric import Rubric

__all__ = ["Dataset", "catalogue", "llmbar_statistics", "load"]

_CATALOGUE: dict[str, tuple[str, str]] = {
    "demo_support": ("demo/support", "customer-support answers; binary criteria and a penalty; 1-3 raters"),
    "demo_essays": ("demo/essays", "short essays; ordinal multi-choice criteria and a nominal one with NA; 2 raters"),
    "demo_code_review": ("demo/code_review", "code-review comments; per-item rubrics with penalties; 1-2 raters"),
    "llmbar": ("llmbar", "LLMBar pairwise instruction following; GPT-4 in both orders; gold labels"),
    "hanna": ("hanna", "HANNA stories; 3 human raters x 6 criteria (1-5); 5 LLMs x 4 prompts"),
    "llm_rubric_real": (
        "llm_rubric",
        "LLM-Rubric real dialogues; GPT-3.5 answer probabilities; 13 human raters (1 per dialogue)",
    ),
    "llm_rubric_synth": (
        "llm_rubric",
        "LLM-Rubric synthetic dialogues; GPT-3.5 answer probabilities; 2-3 human raters each",
    ),
    "agent_reward_bench": (
        "agent_reward_bench",
        "AgentRewardBench web-agent trajectories; expert success / side-effect / looping labels; 1-2 annotators",
    ),
}


def _root() -> Path:
    env = os.environ.get("RUBRICTOOLS_DATASETS")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "datasets")
    for c in candidates:
        if (c / "demo").is_dir() or (c / "llmbar").is_dir():
            return c
    raise FileNotFoundError(
        "rubrictools datasets not found: set RUBRICTOOLS_DATASETS to the repository's datasets/ folder "
        f"(looked in {[str(c) for c in candidates]})"
    )


def _shared() -> Path | None:
    p = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    return p if p.is_dir() else None


def catalogue() -> pl.DataFrame:
    """Available datasets: ``name, kind, description, available`` (files present here).

    >>> "demo_support" in catalogue()["name"].to_list()
    True
    """
    try:
        root: Path | None = _root()
    except FileNotFoundError:
        root = None
    rows = []
    for name, (folder, desc) in _CATALOGUE.items():
        rows.append(
            {
                "name": name,
                "kind": "demo" if name.startswith("demo_") else "public (numbers only)",
                "description": desc,
                "available": root is not None and (root / folder / "CARD.json").exists(),
            }
        )
    return pl.DataFrame(rows)


def load(name: str, *, text_path: str | Path | None = None) -> Dataset:
    """Load a dataset by name (see :func:`list`).

    ``text_path`` attaches third-party text that is not shipped (LLMBar: the folder holding
    ``<subset>/dataset.json``; LLM-Rubric real data: ``real_data.json`` or its folder); by
    default the copy in ``../shared/datasets`` is used when present.
    """
    if name not in _CATALOGUE:
        raise ValueError(f"unknown dataset {name!r}; available: {list(_CATALOGUE)}")
    folder = _root() / _CATALOGUE[name][0]
    card = json.loads((folder / "CARD.json").read_text())
    if name.startswith("demo_"):
        return _load_demo(name, folder, card)
    if name == "llmbar":
        return _load_llmbar(folder, card, text_path)
    if name == "hanna":
        return _load_hanna(folder, card)
    if name == "agent_reward_bench":
        return Dataset(name=name, card=card, human=pl.read_parquet(folder / "annotations.parquet"))
    return _load_llm_rubric(name, folder, card, text_path)


# ----------------------------------------------------------------------------- loaders
def _load_demo(name: str, folder: Path, card: dict[str, Any]) -> Dataset:

    rubric = Rubric.from_file(folder / "rubric.json") if (folder / "rubric.json").exists() else None
    return Dataset(
        name=name,
        card=card,
        human=pl.read_parquet(folder / "human.parquet"),
        verdicts=pl.read_parquet(folder / "verdicts.parquet"),
        submissions=pl.read_parquet(folder / "submissions.parquet"),
        rubric=rubric,
    )


def _load_llmbar(folder: Path, card: dict[str, Any], text_path: str | Path | None) -> Dataset:

    j = pl.read_parquet(folder / "judgments.parquet").with_columns(pl.format("{}/{}", "subset", "item").alias("id"))
    items = j.unique(["subset", "item"], maintain_order=True)
    human = items.select(
        "id", pl.lit("preferred").alias("criterion"), pl.lit("gold").alias("rater"), pl.col("label").cast(pl.String)
    )
    verdicts = pl.concat(
        [
            j.select(
                "id",
                pl.lit("preferred").alias("criterion"),
                pl.col(col).cast(pl.String).alias("verdict"),
                pl.when(pl.col(col).is_null()).then(pl.lit("no valid answer from the judge")).alias("error"),
                pl.format("{}/{}", "judge", pl.lit(order)).alias("judge"),
            )
            for col, order in (("winner_original_order", "original"), ("winner_swapped_order", "swapped"))
        ]
    )
    rubric = Rubric.from_dict(
        [
            {
                "name": "preferred",
                "requirement": "Which output follows the instruction better?",
                "scale": "nominal",
                "options": [{"label": "1", "value": 1.0}, {"label": "2", "value": 0.0}],
            }
        ]
    )
    published = json.loads((folder / "published.json").read_text())
    pub = pl.DataFrame(
        [{"subset": k.split("/")[0], "judge": "/".join(k.split("/")[1:]), **v} for k, v in published.items()]
    )
    subs = None
    shared = _shared()
    src = Path(text_path) if text_path is not None else (shared / "llmbar" if shared is not None else None)
    if src is not None and src.is_dir():
        rows = []
        for subset in items["subset"].unique(maintain_order=True):
            f = src / subset / "dataset.json"
            if f.exists():
                for i, d in enumerate(json.loads(f.read_text())):
                    rows.append(
                        {
                            "id": f"{subset}/{i}",
                            "query": d["input"],
                            "output_1": d["output_1"],
                            "output_2": d["output_2"],
                        }
                    )
        subs = pl.DataFrame(rows) if rows else None
    tables = {"judgments": j, "published": pub, "preferences": _llmbar_preferences(j)}
    return Dataset("llmbar", card, human, verdicts, subs, rubric, tables)


def _llmbar_preferences(j: pl.DataFrame) -> pl.DataFrame:
    """The judgments as a preference table (:func:`rubrictools.grade_pairs`' shape): output 1 is
    A, output 2 is B; ``preferred_ab``/``preferred_ba`` are the original/swapped orders' winners
    (the repository already maps the swapped winner back to the original order)."""
    side = {1: "A", 2: "B"}
    ab = pl.col("winner_original_order").replace_strict(side, default=None, return_dtype=pl.String)
    ba = pl.col("winner_swapped_order").replace_strict(side, default=None, return_dtype=pl.String)
    both = ab.is_not_null() & ba.is_not_null()
    preferred = pl.when(both & (ab == ba)).then(ab).when(both).then(pl.lit("tie"))
    return j.select(
        "id",
        "subset",
        pl.lit("output_1").alias("system_a"),
        pl.lit("output_2").alias("system_b"),
        pl.lit("preferred").alias("criterion"),
        "judge",
        preferred.alias("preferred"),
        preferred.replace_strict(PAIR_VALUES, default=None, return_dtype=pl.Float64).alias("value"),
        ab.alias("preferred_ab"),
        ba.alias("preferred_ba"),
        pl.when(both).then(ab == ba).alias("consistent"),
        pl.when(~both).then(pl.lit("no valid answer from the judge in one order")).alias("error"),
        pl.col("label").replace_strict(side, return_dtype=pl.String).alias("gold"),
    )


def _load_hanna(folder: Path, card: dict[str, Any]) -> Dataset:
    human = pl.read_parquet(folder / "human.parquet")
    llm = pl.read_parquet(folder / "llm.parquet")
    ok = pl.col("rating") >= 1  # below 1: failed LLM answers (coded <= 0 upstream) were averaged in
    verdicts = llm.select(
        "id",
        "criterion",
        pl.when(ok).then(pl.col("rating").round().clip(1, 5).cast(pl.Int64).cast(pl.String)).alias("verdict"),
        pl.when(ok)
        .then(None)
        .otherwise(pl.format("LLM rating {} is outside 1-5 (failed answers averaged in)", pl.col("rating").round(2)))
        .alias("error"),
        pl.format("{}/p{}", "model", "prompt").alias("judge"),
        "rating",
    )
    return Dataset(
        "hanna",
        card,
        human.select("id", "criterion", "rater", "label"),
        verdicts,
        None,
        None,
        {"human": human, "llm": llm},
    )


def _llm_rubric_text(text_path: str | Path | None) -> pl.DataFrame | None:
    """Real dialogues as ``id, topic, submission, conversation`` when available: ``submission``
    has the turns as 'role: text' lines (0.1), ``conversation`` the messages themselves, to
    grade with ``rt.grade(..., column="conversation")``."""
    src = (
        Path(text_path)
        if text_path is not None
        else (shared / "llm_rubric" / "data" / "real_data" if (shared := _shared()) is not None else None)
    )
    f = src / "real_data.json" if src is not None and src.is_dir() else src
    if f is None or not f.is_file():
        return None
    rows = [
        {
            "id": d["_id"],
            "topic": d.get("topic"),
            "submission": "\n".join(f"{m['role']}: {m['content']}" for m in d.get("messages", [])),
            "conversation": [{"role": m["role"], "content": m["content"]} for m in d.get("messages", [])],
        }
        for d in json.loads(f.read_text())
    ]
    return pl.DataFrame(rows, schema_overrides={"conversation": CONVERSATION_DTYPE})


def _load_llm_rubric(name: str, folder: Path, card: dict[str, Any], text_path: str | Path | None = None) -> Dataset:
    part = "real" if name.endswith("real") else "synth"
    h = pl.read_parquet(folder / f"{part}_human.parquet")
    human = h.select(
        pl.col("text_id").alias("id"),
        "criterion",
        pl.col("annotator_id").alias("rater"),
        pl.when(pl.col("rating") > 0).then(pl.col("rating")).alias("label"),  # 0 = not applicable
    )
    g = pl.read_parquet(folder / f"{part}_gpt35.parquet")
    expected = pl.sum_horizontal(pl.col(f"p{k}") * k for k in range(1, 5)) / pl.sum_horizontal(
        pl.col(f"p{k}") for k in range(1, 5)
    )
    verdicts = g.select(
        pl.col("text_id").alias("id"),
        "criterion",
        pl.col("sample").cast(pl.String).alias("verdict"),
        pl.lit("gpt-3.5-turbo-16k").alias("judge"),
        expected.alias("expected"),
        pl.max_horizontal("p1", "p2", "p3", "p4").alias("confidence"),
    )
    dist = (
        g.unpivot(index=["text_id", "criterion"], on=["p1", "p2", "p3", "p4"], variable_name="label", value_name="prob")
        .select(pl.col("text_id").alias("id"), "criterion", pl.col("label").str.slice(1), "prob")
        .sort("id", "criterion", "label")
    )
    tables = {"gpt35": g, "human_wide": h, "distributions": dist}
    subs = None
    if part == "real":
        if (folder / "real_baselines.parquet").exists():
            tables["baselines"] = pl.read_parquet(folder / "real_baselines.parquet")
        subs = _llm_rubric_text(text_path)
    return Dataset(name, card, human, verdicts, subs, None, tables)


def llmbar_statistics(judgments: pl.DataFrame) -> pl.DataFrame:
    """The LLMBar repository's statistics per subset and judge, from the judgments table.

    ``correct_False``/``correct_True``: accuracy in the original/swapped order (no valid
    answer counts as wrong); ``correct_both``: right in both orders; ``equal``: positional
    agreement (same winner in both orders; two missing answers count as equal);
    ``correct_average``: mean of the two accuracies.
    """
    a, b, lab = pl.col("winner_original_order"), pl.col("winner_swapped_order"), pl.col("label")
    ok_a = (a == lab).fill_null(False)
    ok_b = (b == lab).fill_null(False)
    return (
        judgments.group_by("subset", "judge", maintain_order=True)
        .agg(
            ok_a.mean().alias("correct_False"),
            ok_b.mean().alias("correct_True"),
            (ok_a & ok_b).mean().alias("correct_both"),
            (a.fill_null(0) == b.fill_null(0)).mean().alias("equal"),
            pl.len().alias("n"),
        )
        .with_columns(((pl.col("correct_False") + pl.col("correct_True")) / 2).alias("correct_average"))
    )

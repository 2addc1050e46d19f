"""autorubric datasets in YAML as well as JSON, rubric guidelines in them, and the seeded,
stratified train/test split (autorubric's ``split_train_test``)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
import yaml

import rubrictools as rt
from rubrictools import datasets as ds

RUBRIC = {
    "guidelines": "Judge the final answer only.",
    "criteria": [
        {"name": "right", "weight": 5, "requirement": "Right answer"},
        {
            "name": "tone",
            "weight": 2,
            "requirement": "Tone",
            "scale_type": "ordinal",
            "options": [{"label": "poor", "value": 0}, {"label": "good", "value": 1}],
        },
    ],
}
DATA = {
    "name": "tiny",
    "prompt": "Answer",
    "rubric": RUBRIC,
    "items": [
        {"submission": "42", "description": "a", "ground_truth": ["MET", "good"]},
        {"submission": "41", "description": "b", "ground_truth": ["UNMET", "poor"]},
    ],
}


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_files_in_either_format_read_the_same(tmp_path, suffix: str) -> None:
    f = tmp_path / f"d{suffix}"
    f.write_text(yaml.safe_dump(DATA) if suffix != ".json" else json.dumps(DATA))
    back = ds.read_autorubric(f)
    assert back.rubric is not None and back.rubric.guidelines == "Judge the final answer only."
    assert back.human.sort("id", "criterion")["label"].to_list() == ["MET", "good", "UNMET", "poor"]
    assert ds.read_autorubric(f.read_text()).human.equals(back.human)  # the text itself, too


def test_written_yaml_reads_back_with_its_guidelines(tmp_path) -> None:
    back = ds.read_autorubric(DATA)
    out = ds.write_autorubric(
        back.submissions, rubric=back.rubric, human=back.human, path=tmp_path / "w.yaml", prompt="Answer"
    )
    assert yaml.safe_load((tmp_path / "w.yaml").read_text()) == out
    assert out["rubric"]["guidelines"] == "Judge the final answer only."
    again = ds.read_autorubric(tmp_path / "w.yaml")
    assert again.rubric == back.rubric and again.human.equals(back.human)


def test_a_bad_file_names_itself(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("items: [unclosed")
    with pytest.raises(ValueError, match=r"bad\.yaml.*cannot parse"):
        ds.read_autorubric(bad)


@pytest.mark.peers
def test_autorubric_reads_our_guidelines_and_we_read_theirs(tmp_path) -> None:
    ar = pytest.importorskip("autorubric")
    ours = ds.write_autorubric(
        ds.read_autorubric(DATA).submissions, rubric=rt.Rubric.from_dict(RUBRIC), human=ds.read_autorubric(DATA).human
    )
    theirs = ar.RubricDataset.from_json(json.dumps(ours))
    assert theirs.rubric.guidelines == "Judge the final answer only."
    assert [i.ground_truth for i in theirs.items][1][1] == "poor"
    back = ds.read_autorubric(theirs.to_json())
    assert back.rubric == rt.Rubric.from_dict(RUBRIC)


# ------------------------------------------------------------------ split_train_test
def _labelled(n: int = 200, seed: int = 1) -> ds.Dataset:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        rows.append({"id": i, "criterion": "a", "rater": "gt", "label": "MET" if rng.random() < 0.2 else "UNMET"})
        rows.append(
            {"id": i, "criterion": "b", "rater": "gt", "label": str(rng.choice(["lo", "mid", "hi"], p=[0.6, 0.3, 0.1]))}
        )
    subs = pl.DataFrame({"id": range(n), "submission": [f"s{i}" for i in range(n)]})
    return ds.Dataset("synthetic", {}, pl.DataFrame(rows), submissions=subs)


def _shares(d: ds.Dataset) -> dict[str, float]:
    counts = d.human.group_by("criterion", "label").len()
    n = d.human["id"].n_unique()
    return {f"{c}={lab}": k / n for c, lab, k in counts.iter_rows()}


def test_split_sizes_are_exact_disjoint_complete_and_seeded() -> None:
    d = _labelled()
    train, test = ds.split_train_test(d, 60, seed=7)
    a, b = set(train.submissions["id"]), set(test.submissions["id"])
    assert len(a) == 60 and len(b) == 140 and not a & b and a | b == set(range(200))
    assert set(train.human["id"]) == a and train.card["split"] == "train" and test.card["split"] == "test"
    again, _ = ds.split_train_test(d, 60, seed=7)
    assert again.submissions.equals(train.submissions)
    other, _ = ds.split_train_test(d, 60, seed=8)
    assert not other.submissions.equals(train.submissions)
    assert train.submissions["id"].is_sorted()  # the dataset's order is kept


def test_stratified_split_keeps_every_label_share_closer_than_a_shuffle() -> None:
    d = _labelled()
    whole = _shares(d)
    worst_strat, worst_plain = [], []
    for seed in range(10):
        for stratify, out in ((True, worst_strat), (False, worst_plain)):
            train, _ = ds.split_train_test(d, 40, seed=seed, stratify=stratify)
            got = _shares(train)
            out.append(max(abs(got.get(k, 0.0) - v) for k, v in whole.items()))
    # 40 items: one item moves a share by 0.025; the greedy split stays within one item's worth
    assert max(worst_strat) <= 0.025 + 1e-12
    assert np.mean(worst_plain) > 2 * np.mean(worst_strat)


def test_split_errors_name_the_problem() -> None:
    d = _labelled(10)
    with pytest.raises(ValueError, match="n_train must be a whole number from 0 to 10"):
        ds.split_train_test(d, 11)
    with pytest.raises(ValueError, match="n_train"):
        ds.split_train_test(d, True)  # type: ignore[arg-type]
    gap = ds.Dataset("gap", {}, d.human.filter(pl.col("id") != 3), submissions=d.submissions)
    with pytest.raises(ValueError, match="1 item\\(s\\) have none \\(first: \\[3\\]\\)"):
        ds.split_train_test(gap, 5)
    assert ds.split_train_test(gap, 5, stratify=False, seed=0)[0].submissions.height == 5
    two = ds.Dataset("two", {}, pl.concat([d.human, d.human.with_columns(pl.lit("x").alias("rater"))]))
    with pytest.raises(ValueError, match="several raters"):
        ds.split_train_test(two, 5)
    assert ds.split_train_test(two, 5, rater="x", seed=0)[0].human["id"].n_unique() == 5

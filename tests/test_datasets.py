"""rubrictools.datasets: shipped extracts, demo sets, autorubric JSON round trip."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from rubrictools import datasets as ds
from rubrictools import metrics as m


def test_catalogue_lists_everything_and_all_load() -> None:
    cat = ds.catalogue()
    assert cat["available"].all()
    for name in cat["name"]:
        d = ds.load(name)
        assert {"id", "criterion", "rater", "label"} <= set(d.human.columns)
        assert d.card["licence"] and d.card["origin"]
        assert name.split("_")[0] in d.describe() or d.name in d.describe()
    with pytest.raises(ValueError, match="unknown dataset"):
        ds.load("nope")


def test_demo_sets_cover_the_promised_shapes() -> None:
    sup = ds.load("demo_support")
    assert sup.rubric is not None and any(c.weight < 0 for c in sup.rubric)
    assert sup.human.group_by("id").agg(pl.col("rater").n_unique()).filter(pl.col("rater") == 3).height == 30
    ess = ds.load("demo_essays")
    assert {c.kind for c in ess.rubric} == {"ordinal", "nominal"}  # type: ignore[union-attr]
    code = ds.load("demo_code_review")
    assert code.rubric is None and code.submissions["rubric"].null_count() == 0  # type: ignore[index]
    # per-item rubrics: the verdicts carry weights, so they score without a shared rubric
    assert rt.score(code.verdicts)["score"].null_count() == 0
    for d in (sup, ess):
        t = rt.agreement(d.verdicts, d.human, d.rubric, n_resamples=0)
        assert t["value"].null_count() < t.height


def test_llm_rubric_extract_reproduces_published_baseline() -> None:
    """Expected-value baseline on real data, overall satisfaction (Q0): RMSE .9187, Pearson .1773,
    Spearman .0867, Kendall .0659 (LLM-Rubric repository's shipped predictions)."""
    d = ds.load("llm_rubric_real")
    b = d.tables["baselines"].filter(pl.col("criterion") == "Q0")
    h = d.human.filter(pl.col("criterion") == "Q0").rename({"id": "text_id", "rater": "annotator_id"})
    j = b.join(h, on=["text_id", "annotator_id"]).drop_nulls("label")
    assert j.height == 223
    assert round(m.rmse(j["label"], j["expected_llm"]), 4) == 0.9187
    assert round(m.pearson(j["label"], j["expected_llm"]), 4) == 0.1773
    assert round(m.spearman(j["label"], j["expected_llm"]), 4) == 0.0867
    assert round(m.kendall(j["label"], j["expected_llm"]), 4) == 0.0659
    # the same from the shipped probabilities (expected value of the judge distribution)
    v = d.verdicts.filter(pl.col("criterion") == "Q0").select("id", "expected")
    jj = v.join(d.human.filter(pl.col("criterion") == "Q0"), on="id").drop_nulls("label")
    assert round(m.rmse(jj["label"], jj["expected"]), 4) == 0.9187


def test_llmbar_extract_reproduces_repository_statistics() -> None:
    d = ds.load("llmbar")
    ours = ds.llmbar_statistics(d.tables["judgments"])
    pub = d.tables["published"]
    joined = ours.join(pub, on=["subset", "judge"], suffix="_pub")
    assert joined.height == 16
    for col in ("correct_False", "correct_True", "correct_both", "equal", "correct_average"):
        np.testing.assert_allclose(joined[col], joined[f"{col}_pub"], atol=1e-9)


def test_hanna_extract_shape() -> None:
    d = ds.load("hanna")
    assert d.human["id"].n_unique() == 1056 and d.human["rater"].n_unique() == 3
    assert set(d.human["criterion"]) == {"relevance", "coherence", "empathy", "surprise", "engagement", "complexity"}
    assert d.human["label"].min() >= 1 and d.human["label"].max() <= 5
    assert d.verdicts["judge"].n_unique() == 20


def test_text_is_attached_from_a_local_copy(shared) -> None:
    """Third-party text is never shipped but loads from ../shared (skips without it)."""
    real = ds.load("llm_rubric_real")
    assert real.submissions is not None and real.submissions.height == 223
    assert set(real.submissions["id"]) == set(real.human["id"])
    llmbar = ds.load("llmbar", text_path=shared / "datasets" / "llmbar")
    assert llmbar.submissions is not None and set(llmbar.submissions["id"]) == set(llmbar.human["id"])


def test_extract_matches_shared_sources(shared) -> None:
    """The shipped numbers are the ones in ../shared (skips without it)."""
    import csv

    src = shared / "datasets" / "llm_rubric" / "data" / "real_data" / "human_judges_real_convs_FIXED_ANON.tsv"
    rows = list(csv.DictReader(src.open(), delimiter="\t"))
    d = ds.load("llm_rubric_real").human
    for r in rows[:20]:
        got = d.filter((pl.col("id") == r["text_id"]) & (pl.col("criterion") == "Q0"))["label"].item()
        assert got == (int(r["Q0"]) or None)
    res = json.loads((shared / "datasets" / "llmbar" / "Natural" / "gpt4_Vanilla_NoRules" / "result.json").read_text())
    j = (
        ds.load("llmbar")
        .tables["judgments"]
        .filter((pl.col("subset") == "Natural") & (pl.col("judge") == "gpt4/Vanilla_NoRules"))
    )
    assert j["label"].to_list() == [int(x["label"]) for x in res]


def test_autorubric_json_round_trip(tmp_path) -> None:
    sup = ds.load("demo_support")
    one = sup.human.filter(pl.col("rater") == "ana")
    out = ds.write_autorubric(
        sup.submissions.head(30), rubric=sup.rubric, human=one, path=tmp_path / "d.json", prompt="Answer the customer"
    )  # type: ignore[union-attr]
    assert len(out["items"]) == 30 and out["items"][0]["ground_truth"] is not None
    back = ds.read_autorubric(tmp_path / "d.json")
    assert back.rubric == sup.rubric
    merged = back.human.join(one.with_columns(pl.col("id").str.slice(1).cast(pl.Int64)), on=["id", "criterion"])
    assert merged.height == 150 and (merged["label"] == merged["label_right"]).all()
    with pytest.raises(ValueError, match="several raters"):
        ds.write_autorubric(sup.submissions, rubric=sup.rubric, human=sup.human)  # type: ignore[arg-type]


@pytest.mark.peers
def test_autorubric_reads_our_json_and_we_read_theirs(tmp_path) -> None:
    ar = pytest.importorskip("autorubric")
    code = ds.load("demo_code_review")
    labels = code.human.filter(pl.col("rater") == "fay")
    ds.write_autorubric(
        code.submissions.head(5), rubric=None, human=labels, path=tmp_path / "ours.json", prompt="Review"
    )  # type: ignore[union-attr]
    theirs = ar.RubricDataset.from_file(str(tmp_path / "ours.json"))
    assert len(theirs.items) == 5 and theirs.get_item_rubric(0).rubric[0].name == "finds_bug"
    theirs.to_file(str(tmp_path / "theirs.json"))
    back = ds.read_autorubric(tmp_path / "theirs.json")
    assert back.human.height == 20
    assert json.loads(back.submissions["rubric"][0])[0]["name"] == "finds_bug"  # type: ignore[index]


def test_public_extracts_ship_numbers_and_ids_only() -> None:
    """No third-party text in datasets/: every string cell of the public extracts is short (ids, labels, names)."""
    root = Path(__file__).resolve().parents[1] / "datasets"  # the repository's shipped extracts
    files = [p for sub in ("llmbar", "hanna", "llm_rubric") for p in (root / sub).glob("*.parquet")]
    assert len(files) == 8
    for f in files:
        df = pl.read_parquet(f)
        for col, dtype in df.schema.items():
            if dtype == pl.String:
                longest = df[col].str.len_chars().max() or 0
                assert longest <= 40, f"{f.name}:{col} holds text ({longest} chars)"


def test_catalogue_replaces_list_which_shadowed_a_builtin():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = rt.datasets.list()
    assert old.equals(rt.datasets.catalogue())
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)


def test_write_autorubric_keeps_an_items_own_rubric_and_its_ground_truth_beside_a_global_one() -> None:
    # issue 21: with a global rubric, a row's own rubric and its ground truth were dropped
    glob = rt.Rubric.from_dict([{"name": "a", "requirement": "A"}])
    own = [{"name": "b", "requirement": "B"}, {"name": "c", "requirement": "C"}]
    subs = pl.DataFrame({"id": [1, 2], "submission": ["x", "y"], "rubric": [json.dumps(own), None]})
    human = pl.DataFrame({"id": [1, 1, 2], "criterion": ["b", "c", "a"], "label": ["MET", "UNMET", "UNMET"]})
    out = ds.write_autorubric(subs, rubric=glob, human=human)
    first, second = out["items"]
    assert [c["name"] for c in first["rubric"]] == ["b", "c"] and first["ground_truth"] == ["MET", "UNMET"]
    assert "rubric" not in second and second["ground_truth"] == ["UNMET"]
    back = ds.read_autorubric(out)
    assert sorted(back.human.select("id", "criterion", "label").rows()) == [
        (0, "b", "MET"),
        (0, "c", "UNMET"),
        (1, "a", "UNMET"),
    ]


def test_read_autorubric_refuses_ground_truth_the_rubric_does_not_allow() -> None:
    data = {
        "rubric": [
            {
                "name": "tone",
                "requirement": "T",
                "options": [{"label": "low", "value": 0}, {"label": "high", "value": 1}],
            }
        ],
        "items": [{"submission": "x", "ground_truth": ["medium"]}],
    }
    with pytest.raises(ValueError, match=r"item 0: ground_truth\[0\] = 'medium' is not a label of criterion 'tone'"):
        ds.read_autorubric(data)
    data["items"][0]["ground_truth"] = [" HIGH "]
    assert ds.read_autorubric(data).human["label"].to_list() == ["high"]  # canonical spelling


def test_agent_reward_bench_ships_its_labels():
    """Before: notebook 13 needed a package the README's install did not give, and skipped."""

    d = rt.datasets.load("agent_reward_bench")
    h = d.human
    assert set(h.columns) >= {"id", "rater", "criterion", "label"}
    assert h["id"].n_unique() == 1302 and set(h["criterion"]) == {"success", "side_effect", "looping"}
    twice = h.filter(pl.col("rater").n_unique().over("id", "criterion") >= 2)
    assert twice["id"].n_unique() == 106
    assert set(h.filter(criterion="success")["label"].drop_nulls()) <= {"Successful", "Unsuccessful", "Unsure"}


def test_card_shows_as_proportional_text_with_its_size() -> None:
    """A notebook shows the dataset's card as an HTML table (it printed a monospace block),
    with the same fields and size line as ``describe()``, every value escaped."""
    d = ds.load("hanna")
    page = d._repr_html_()
    assert "<pre>" not in page and "<table>" in page
    assert "1,056 items, 19,008 human labels from 3 raters" in page and "size: 1,056 items" in d.describe()
    assert "empty" not in page  # HANNA has no empty label
    assert "verdicts (126,720 rows)" in page  # counts with separators, not the repr's verdicts=126720
    # the source's own tables are named as such, not listed as if they were more data (before: read as duplicates)
    assert "; as published, in .tables: &#x27;human&#x27; (19,008 rows), &#x27;llm&#x27; (126,720 rows)" in page
    assert d.describe().splitlines()[0] == f"hanna: {d.card['title']}"
    assert "not included" in page and "&lt;system&gt;" in page  # 'id = <system>/...' escaped


def test_card_counts_empty_labels_apart() -> None:
    """Before: "2,007 human labels" on a card where 306 of them carry no rating."""
    human = pl.DataFrame({"id": [1, 1, 2], "rater": ["a", "b", "a"], "criterion": "c", "label": ["MET", None, "UNMET"]})
    d = ds.Dataset(name="x", card={"title": "t"}, human=human)
    assert d.describe().endswith("size: 2 items, 3 human labels from 2 raters, 1 of them empty (no rating given)")

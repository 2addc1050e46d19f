"""RubricTree: PaperBench's rubric format read exactly, node scores equal to hand computations."""

from __future__ import annotations

import json

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.rubric import RubricTree


def leaf(i: str, w: float, cat: str = "Code Development") -> dict:
    return {"id": i, "requirements": f"requirement {i}", "weight": w, "sub_tasks": [], "task_category": cat}


def node(i: str, w: float, *kids: dict) -> dict:
    return {"id": i, "requirements": f"requirement {i}", "weight": w, "sub_tasks": list(kids)}


#   root
#   |- A (w 2): a1 (w 1), a2 (w 3)             mixed below the root: an inner node ...
#   |- b (w 1) leaf                            ... beside a leaf
#   '- C (w 1): c1 (w 0), D (w 2): d1 (w 1)    a zero-weight leaf; Z (w 1) with only zero weights
#      '- Z (w 1): z1 (w 0)
TREE = node(
    "root",
    1,
    node("A", 2, leaf("a1", 1), leaf("a2", 3, "Result Analysis")),
    leaf("b", 1, "Code Execution"),
    node("C", 1, leaf("c1", 0), node("D", 2, leaf("d1", 1)), node("Z", 1, leaf("z1", 0))),
)


def verdicts(met: dict[str, list[str]]) -> pl.DataFrame:
    """``met``: submission id -> the leaves it met."""
    leaves = ["a1", "a2", "b", "c1", "d1", "z1"]
    rows = [(sid, lf, "MET" if lf in on else "UNMET") for sid, on in met.items() for lf in leaves]
    return pl.DataFrame(rows, schema=["id", "criterion", "verdict"], orient="row")


def test_scores_equal_hand_computations() -> None:
    tree = RubricTree.from_dict(TREE)
    s = tree.score(verdicts({"x": ["a2", "b", "d1", "z1"], "y": ["a1", "c1"]}))
    got = {(r["id"], r["node"]): r["score"] for r in s.iter_rows(named=True)}
    # x: A = (1*0 + 3*1)/4 = .75; D = 1; Z = (0*1)/0 -> 0 (PaperBench: zero total weight scores 0);
    #    C = (0*0 + 2*1 + 1*0)/(0+2+1) = 2/3; root = (2*.75 + 1*1 + 1*2/3)/4 = 0.7916...
    assert got[("x", "A")] == pytest.approx(0.75) and got[("x", "Z")] == 0.0 and got[("x", "D")] == 1.0
    assert got[("x", "C")] == pytest.approx(2 / 3)
    assert got[("x", "root")] == pytest.approx((2 * 0.75 + 1 + 2 / 3) / 4)
    # y: A = 1/4; b = 0; C = (0*1 + 2*0 + 1*0)/3 = 0 (c1 has weight 0); root = (2*.25)/4 = .125
    assert got[("y", "A")] == pytest.approx(0.25) and got[("y", "C")] == 0.0
    assert got[("y", "root")] == pytest.approx(0.125)
    assert s.filter(pl.col("id") == "x")["node"].to_list() == [
        "root",
        "A",
        "a1",
        "a2",
        "b",
        "C",
        "c1",
        "D",
        "d1",
        "Z",
        "z1",
    ]
    assert set(s.columns) == {"id", "node", "parent", "depth", "weight", "leaf", "score"}


def test_a_failed_leaf_is_null_up_to_the_root_unless_scored_zero() -> None:
    tree = RubricTree.from_dict(TREE)
    v = verdicts({"x": ["a1", "a2", "b", "d1"]}).with_columns(
        pl.when(pl.col("criterion") == "a2").then(pl.lit("timeout")).otherwise(None).alias("error")
    )
    got = {r["node"]: r["score"] for r in tree.score(v).iter_rows(named=True)}
    assert got["a2"] is None and got["A"] is None and got["root"] is None and got["C"] == pytest.approx(2 / 3)
    zero = {r["node"]: r["score"] for r in tree.score(v, on_error="zero").iter_rows(named=True)}
    assert zero["A"] == pytest.approx(0.25) and zero["root"] == pytest.approx((0.5 + 1 + 2 / 3) / 4)
    missing = {r["node"]: r["score"] for r in tree.score(v.filter(pl.col("criterion") != "b")).iter_rows(named=True)}
    assert missing["b"] is None and missing["root"] is None  # no verdict is not a 0


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (node("root", 1, {**leaf("a", 1), "weight": -1}), r"root.sub_tasks\[0\] \(id 'a'\): weight must be"),
        (node("root", 1, {**leaf("a", 1), "task_category": "Cooking"}), "a leaf needs a task_category"),
        ({**node("root", 1, leaf("a", 1)), "task_category": "Code Development"}, "an inner node has no task_category"),
        ({"id": "root", "weight": 1, "sub_tasks": []}, r"missing field\(s\) \['requirements'\]"),
        (node("root", 1, {**leaf("a", 1), "finegrained_task_category": "Vibes"}), "finegrained_task_category"),
    ],
)
def test_the_format_is_checked_naming_the_node(broken: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RubricTree.from_dict(broken)


def test_grading_the_leaves_then_scoring_the_tree(tmp_path) -> None:
    path = tmp_path / "rubric.json"
    path.write_text(json.dumps(TREE))
    tree = RubricTree.from_file(path)
    assert RubricTree.from_dict(tree.to_dict()) == tree
    rub = tree.rubric()
    assert rub.names == ("a1", "a2", "b", "c1", "d1", "z1") and rub["a2"].weight == 3
    assert "reproduction run" in rub["a2"].requirement and rub["a2"].tags == ("Result Analysis",)
    subs = pl.DataFrame({"submission": ["code for a1 a2 b d1", "nothing"]})
    judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if c.name in text.split() else "UNMET")
    v = rt.grade(subs, rub, model=judge, progress=False, record=False)
    roots = tree.score(v).filter(pl.col("node") == "root")["score"].to_list()
    assert roots == pytest.approx([(2 * 1 + 1 + 1 * 2 / 3) / 4, 0.0])
    nodes = tree.nodes()
    assert nodes.filter("leaf").height == 6 and nodes["depth"].max() == 3


def test_a_table_of_several_judges_is_scored_for_the_judge_named() -> None:
    tree = RubricTree.from_dict(TREE)
    a = verdicts({"x": ["a1", "a2", "b", "d1"]}).with_columns(judge=pl.lit("a"))
    b = verdicts({"x": []}).with_columns(judge=pl.lit("b"))
    both = pl.concat([a, b])
    with pytest.raises(ValueError, match="judge="):
        tree.score(both)  # two judges, no ensemble rows: which one is ambiguous, never silently mixed
    root = {j: tree.score(both, judge=j).filter(pl.col("node") == "root")["score"].item() for j in ("a", "b")}
    assert root == {"a": pytest.approx((2 * 1 + 1 + 1 * 2 / 3) / 4), "b": 0.0}
    assert tree.score(both, judge="a").filter(pl.col("node") == "a1").height == 1  # one row per node
    ens = both.filter(pl.col("judge") == "a").with_columns(judge=pl.lit("ensemble"))
    assert tree.score(pl.concat([both, ens])).equals(tree.score(both, judge="a"))


def test_verdicts_of_another_rubric_are_refused_not_scored_null() -> None:
    tree = RubricTree.from_dict(TREE)
    other = pl.DataFrame({"id": ["x", "x"], "criterion": ["clarity", "tone"], "verdict": ["MET", "UNMET"]})
    with pytest.raises(ValueError, match=r"no verdict is for a leaf of this tree .*\['clarity', 'tone'\]"):
        tree.score(other)
    # some leaves graded, others missing: null where missing, as documented (not an error)
    part = tree.score(verdicts({"x": ["a1"]}).filter(pl.col("criterion") != "b"))
    assert part.filter(pl.col("node") == "b")["score"].to_list() == [None]


def test_repeated_node_ids_are_read_as_paperbench_reads_them_and_renamed() -> None:
    """Two of PaperBench's 23 rubrics repeat node ids; its loader accepts them. Shapes: a leaf
    id repeated in two subtrees, an inner id repeated, and an id whose '#2' is taken."""
    tree_dict = node(
        "root",
        1,
        node("A", 1, leaf("x", 1), leaf("y", 1)),
        node("A", 3, leaf("x", 1), leaf("x#2", 1)),
    )
    with pytest.warns(UserWarning, match=r"node ids \['A', 'x'\] repeat"):
        tree = RubricTree.from_dict(tree_dict)
    nodes = tree.nodes()
    assert nodes["node"].to_list() == ["root", "A", "x", "y", "A#2", "x#3", "x#2"]
    assert nodes["node"].is_unique().all()
    assert tree.rubric().names == ("x", "y", "x#3", "x#2")
    v = pl.DataFrame({"id": [1] * 4, "criterion": ["x", "y", "x#3", "x#2"], "verdict": ["MET", "UNMET", "MET", "MET"]})
    got = dict(tree.score(v).select("node", "score").iter_rows())
    assert got["A"] == 0.5 and got["A#2"] == 1.0 and got["root"] == pytest.approx((0.5 + 3 * 1.0) / 4)


def test_a_wide_tree_with_unique_ids_reads_without_renaming() -> None:
    import warnings

    wide = node("root", 1, *(leaf(f"l{i}", 1) for i in range(10_000)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tree = RubricTree.from_dict(wide)
    assert tree.nodes().height == 10_001


def test_partial_mixed_case_duplicated_and_weightless_inputs_are_named() -> None:
    tree = RubricTree.from_dict(TREE)
    full = verdicts({"x": ["a1", "a2", "b", "d1"]})
    with pytest.warns(UserWarning, match=r"1 of 6 leaves have no verdict: b .*left out: extra$"):
        tree.score(
            pl.concat([full.filter(pl.col("criterion") != "b"), full.head(1).with_columns(criterion=pl.lit("extra"))])
        )
    lower = tree.score(full.with_columns(pl.col("verdict").str.to_lowercase()))
    assert lower.equals(tree.score(full))  # "met" reads as MET, as rt.score reads it
    with pytest.raises(ValueError, match=r"several rows per \(id, criterion\)"):
        tree.score(pl.concat([full, full.head(1)]))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['verdict'\]"):
        tree.score(full.drop("verdict"))
    zero = RubricTree.from_dict(node("root", 1, leaf("a", 0), leaf("b", 0)))
    with pytest.raises(ValueError, match="every leaf of the rubric tree has weight 0"):
        zero.score(pl.DataFrame({"id": [1, 1], "criterion": ["a", "b"], "verdict": ["MET", "MET"]}))

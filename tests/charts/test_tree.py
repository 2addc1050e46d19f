"""rubric_tree: indented requirements, a fixed 0-1 axis, unscored nodes said so."""

from __future__ import annotations

import polars as pl

import rubrictools as rt

LONG = "A requirement long enough that one line cannot hold it whole, so it wraps onto a second line"
TREE = rt.RubricTree.from_dict(
    {
        "id": "r",
        "requirements": "All of it",
        "weight": 1,
        "sub_tasks": [
            {"id": "a", "requirements": LONG, "weight": 2, "sub_tasks": [], "task_category": "Code Development"},
            {"id": "b", "requirements": "Short", "weight": 1, "sub_tasks": [], "task_category": "Code Execution"},
        ],
    }
)


def _rows(spec: dict) -> list[dict]:
    data = spec.get("data") or spec["hconcat"][0]["data"]  # altair hoists the shared data to the top
    return data["values"] if "values" in data else spec["datasets"][data["name"]]


def test_labels_are_indented_and_wrapped_whole_and_unscored_nodes_say_so() -> None:
    """Before: a label over 64 characters was cut with "..." (the rest only in a tooltip, which an
    exported page cannot show)."""
    v = pl.DataFrame({"id": [1, 1, 2, 2], "criterion": ["a", "b"] * 2, "verdict": ["MET", "UNMET", "MET", None],
                      "error": [None, None, None, "timeout"]})  # fmt: skip
    spec = rt.charts.rubric_tree(TREE, TREE.score(v)).to_dict()
    rows = {r["node"]: r for r in _rows(spec)}
    assert rows["a"]["indent"] > rows["r"]["indent"] == 0  # children right of their parent
    assert rows["a"]["label"].replace("\n", " ") == f"a: {LONG}" and rows["a"]["label"].count("\n") == 1
    assert rows["b"]["label"] == "b: Short" and "..." not in str(rows)
    # the row after a two-line label starts two lines down: rows never overlap
    assert rows["b"]["top"] - rows["a"]["top"] > rows["a"]["top"] - rows["r"]["top"]
    names = spec["hconcat"][0]
    assert names["mark"]["lineBreak"] == "\n" and names["height"] == rows["b"]["top"] + 13 + 5
    assert rows["r"]["text"].endswith("1 unscored)")  # the mean says it leaves submission 2 out
    bars = spec["hconcat"][1]["layer"][0]["encoding"]["x"]
    assert bars["scale"]["domain"] == [0, 1]
    one = {r["node"]: r for r in _rows(rt.charts.rubric_tree(TREE, TREE.score(v), submission=2).to_dict())}
    assert one["r"]["text"].startswith("no score")


def test_rows_name_their_node_and_print_scores_with_three_decimals() -> None:
    """Before: rows showed only the requirement (the table says "process") and "1.0" beside "0.95";
    then two decimals beside a table's three."""
    v = pl.DataFrame({"id": [1, 1], "criterion": ["a", "b"], "verdict": ["MET", "UNMET"]})
    rows = {r["node"]: r for r in _rows(rt.charts.rubric_tree(TREE, TREE.score(v)).to_dict())}
    assert rows["a"]["label"].startswith("a: A requirement") and rows["r"]["label"] == "r: All of it"
    assert rows["a"]["text"] == "1.000  (weight 2)" and rows["b"]["text"] == "0.000  (weight 1)"

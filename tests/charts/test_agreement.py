"""forest: shares on a percentage axis, and a chance line where chance lies."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt
from tests.vega import walk

SHARES = pl.DataFrame(
    {
        "subset": ["Natural", "MT-Bench"],
        "metric": ["positional agreement"] * 2,
        "value": [0.9, 0.7],
        "ci_low": [0.84, 0.64],
        "ci_high": [0.95, 0.76],
        "n": [100, 200],
    }
)


def _x(spec: dict) -> dict:
    return next(n["encoding"]["x"] for n in walk(spec) if "title" in n.get("encoding", {}).get("x", {}))


def test_a_share_is_drawn_on_a_percentage_axis_with_its_chance_line() -> None:
    """Before: positional agreement on a fraction axis (0.6, 0.7...) and no line at 50%."""
    spec = rt.charts.forest(SHARES, by="subset", chance=0.5).to_dict()
    x = _x(spec)
    assert x["axis"]["format"] == "%" and "dashed: chance at 50%" in x["title"]
    dashed = [n for n in walk(spec) if isinstance(n.get("mark"), dict) and n["mark"].get("strokeDash")]
    assert [n["encoding"]["x"]["datum"] for n in dashed] == [0.5]
    plain = rt.charts.forest(SHARES, by="subset").to_dict()
    assert not [n for n in walk(plain) if isinstance(n.get("mark"), dict) and n["mark"].get("strokeDash")]


def test_a_kappa_is_not_a_share_and_chance_must_be_a_number() -> None:
    kappa = SHARES.with_columns(pl.lit("cohen_kappa").alias("metric"))
    x = _x(rt.charts.forest(kappa, by="subset").to_dict())
    assert "format" not in x.get("axis", {}) and "dashed: chance)" in x["title"]
    with pytest.raises(TypeError, match="chance must be a number"):
        rt.charts.forest(SHARES, by="subset", chance="0.5")  # type: ignore[arg-type]  # reason: the bad input under test
    with pytest.raises(ValueError, match="chance must be a finite number, got nan"):
        rt.charts.forest(SHARES, by="subset", chance=float("nan"))
    with pytest.raises(
        ValueError, match=r"chance=50 is outside \[0, 1\], the scale of a share \(for 50%, pass chance=0.5\)"
    ):
        rt.charts.forest(SHARES, by="subset", chance=50)
    assert rt.charts.forest(kappa, by="subset", chance=np.int64(0)).to_dict()  # a numpy number is a number


def test_confusion_names_who_gave_the_verdicts_drawn_rules_included() -> None:
    v = pl.DataFrame({"id": [1, 2, 1, 2], "criterion": ["a", "a", "b", "b"], "verdict": ["MET", "UNMET", "MET", "MET"],
                      "judge": ["gpt", "gpt", "rule", "rule"]})  # fmt: skip
    h = pl.DataFrame({"id": [1, 2, 1, 2], "criterion": ["a", "a", "b", "b"], "label": ["MET", "MET", "MET", "UNMET"]})
    titles = [rt.charts.confusion(v, h, criterion=c).to_dict()["title"] for c in (None, "a", "b")]
    assert [t.split(" vs ")[0] for t in titles] == ["gpt and rules", "a: gpt", "b: rules"]
    assert rt.charts.confusion(v.drop("judge"), h).to_dict()["title"].startswith("Judge vs human labels")

"""No label a person typed is lost across a restart, whatever the id column's type."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import polars as pl
import pytest

import rubrictools as rt
from rubrictools import widgets

RUBRIC = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
IDS = {
    "date": [dt.date(2024, 1, 1), dt.date(2024, 1, 2)],
    "datetime": [dt.datetime(2024, 1, 1, 9, 30), dt.datetime(2024, 1, 1, 9, 31, 5, 250)],
    "datetime-utc": [dt.datetime(2024, 1, 1, 9, 30, tzinfo=dt.UTC), dt.datetime(2024, 1, 2, tzinfo=dt.UTC)],
    "decimal": [Decimal("1.50"), Decimal("2.25")],
    "string": ["a-1", "2024-01-01"],
    "int": [7, 8],
    "float": [1.0, 2.5],
}


@pytest.mark.parametrize("kind", list(IDS))
def test_labels_on_any_id_type_come_back_after_a_restart(kind: str, tmp_path) -> None:
    ids = IDS[kind]
    subs = pl.DataFrame({"id": ids, "submission": ["hello", "go away"]})
    path = tmp_path / "labels.jsonl"
    lw = widgets.label(subs, RUBRIC, rater="zoe", path=path)
    lw.buttons["MET"].click()
    assert lw.labels.height == 1
    again = widgets.label(subs, RUBRIC, rater="zoe", path=path)  # a restarted kernel
    assert again.labels.height == 1 and again.labels["id"].to_list() == [ids[0]]
    assert again.labels.select("id", "label").equals(lw.labels.select("id", "label"))
    assert again.current == (ids[1], "greets")
    again.buttons["UNMET"].click()
    third = widgets.label(subs, RUBRIC, rater="zoe", path=path)
    assert third.labels["label"].to_list() == ["MET", "UNMET"] and third.current is None
    # the file is plain JSON lines a person can read
    assert all(isinstance(json.loads(x)["id"], str | int | float) for x in path.read_text().splitlines())


def test_an_undo_after_a_restart_is_honoured_for_a_date_id(tmp_path) -> None:
    subs = pl.DataFrame({"id": IDS["date"], "submission": ["hello", "bye"]})
    path = tmp_path / "labels.jsonl"
    lw = widgets.label(subs, RUBRIC, rater="zoe", path=path)
    lw.buttons["MET"].click()
    lw.undo_button.click()
    assert widgets.label(subs, RUBRIC, rater="zoe", path=path).labels.height == 0

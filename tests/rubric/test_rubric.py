from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

import rubrictools as rt
from rubrictools.rubric import Criterion, Option, Rubric

from ..conftest import DATA


def test_binary_defaults_and_autonaming():
    r = Rubric.from_dict([{"requirement": "a"}, {"name": "b", "requirement": "b", "weight": -3}])
    assert r.names == ("c1", "b")
    assert r[0].weight == 10.0 and r[0].is_binary and r[0].kind == "binary"
    assert r["B"].weight == -3.0  # lookup ignores case
    assert r.total_positive_weight == 10.0


def test_multichoice_defaults_to_ordinal_and_accepts_scale_type_alias():
    c = Criterion.model_validate(
        {
            "requirement": "q",
            "options": [{"label": "lo", "value": 0}, {"label": "hi", "value": 1}],
            "scale_type": "nominal",
        }
    )
    assert c.scale == "nominal" and c.is_multi_choice
    c2 = Criterion(requirement="q", options=[Option(label="a", value=0), Option(label="b", value=1)])
    assert c2.scale == "ordinal"
    assert c2.labels == ("a", "b")
    assert c2.canonical_label("  B ") == "b"
    assert c2.value_of("A") == 0.0


def test_criterion_is_immutable():
    c = Criterion(requirement="x")
    with pytest.raises(ValidationError):
        c.weight = 3  # type: ignore[misc]


def test_worst_value_is_weight_sign_aware():
    opts = [{"label": "a", "value": 0.2}, {"label": "b", "value": 0.9}, {"label": "na", "value": 1.0, "na": True}]
    assert Criterion(requirement="x", weight=5, options=opts).worst_value == 0.2
    assert Criterion(requirement="x", weight=-5, options=opts).worst_value == 0.9
    assert Criterion(requirement="x", weight=-5).worst_value == 1.0
    assert Criterion(requirement="x", weight=5).worst_value == 0.0


@pytest.mark.parametrize(
    ("data", "pattern"),
    [
        ([], "at least one criterion"),
        ({"sections": "nope"}, "'sections' must be a list"),
        ({"foo": []}, "unknown top-level keys"),
        ([{"requirement": "a", "weight": float("nan")}], r"criterion 0: field 'weight': weight must be finite"),
        ([{"requirement": "a", "weight": float("inf")}], r"field 'weight'"),
        (
            [{"requirement": "a"}, {"name": "x", "requirement": "b", "wieght": 3}],
            r"criterion 1 \('x'\): field 'wieght': unknown key",
        ),
        (
            [{"name": "x", "requirement": "a"}, {"name": " X", "requirement": "b"}],
            r"criterion 1 \(' X'\): field 'name': duplicate",
        ),
        (
            [{"requirement": "a", "options": [{"label": "only", "value": 1}]}],
            r"criterion 0: .*at least 2 non-NA options",
        ),
        (
            [{"requirement": "a", "options": [{"label": "a", "value": 1}, {"label": "x", "value": 0, "na": True}]}],
            "at least 2 non-NA",
        ),
        (
            [{"requirement": "a", "options": [{"label": "Yes", "value": 1}, {"label": " yes", "value": 0}]}],
            "duplicate option label",
        ),
        (
            [{"requirement": "a", "options": [{"label": "a", "value": 2}, {"label": "b", "value": 0}]}],
            r"options.0.value",
        ),
        ([{"requirement": "   "}], "requirement must not be blank"),
        ([{"requirement": "a", "scale": "ordinal"}], "scale only applies"),
        ([[1, 2]], "item 0 must be a mapping"),
        ([{"criteria": {"a": 1}}], "'criteria' must be a list"),
        ("just text", "expected a list"),
    ],
)
def test_invalid_rubrics_raise_one_clear_value_error(data, pattern):
    with pytest.raises(ValueError, match=pattern):
        Rubric.from_dict(data)


def test_all_shapes_load_to_the_same_rubric():
    crit = [{"name": "a", "requirement": "x", "weight": 2}, {"name": "b", "requirement": "y", "weight": -1}]
    flat = Rubric.from_dict(crit)
    assert Rubric.from_dict({"rubric": crit}) == flat
    assert Rubric.from_dict({"criteria": crit}) == flat
    sectioned = Rubric.from_dict([{"criteria": crit[:1]}, {"criteria": crit[1:]}])
    assert sectioned.names == flat.names
    assert Rubric.from_dict({"rubric": {"sections": [{"name": "S", "criteria": crit}]}})[0].group == "S"


def test_files_load_and_round_trip(tmp_path: Path):
    r = Rubric.from_file(DATA / "autorubric_style.yaml")
    assert r.names == ("answer", "c2", "tone", "padding")
    assert r["tone"].options is not None and r["tone"].options[3].na
    assert r["answer"].group == "Content" and r["padding"].group == "Style"
    assert Rubric.from_dict(r.to_dict()) == r
    assert Rubric.from_yaml(r.to_yaml()) == r
    assert Rubric.from_json(r.to_json()) == r
    p = tmp_path / "r.yml"
    p.write_text(r.to_yaml())
    assert Rubric.from_file(p) == r
    j = Rubric.from_file(DATA / "rubric_pkg_style.json")
    assert [c.weight for c in j] == [10.0, 8.0, -15.0]


def test_file_errors(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="not found"):
        Rubric.from_file(tmp_path / "missing.yaml")
    (tmp_path / "r.txt").write_text("[]")
    with pytest.raises(ValueError, match=r"unsupported file extension '.txt'"):
        Rubric.from_file(tmp_path / "r.txt")
    with pytest.raises(ValueError, match="invalid JSON"):
        Rubric.from_json("{not json")
    with pytest.raises(ValueError, match="invalid YAML"):
        Rubric.from_yaml("a: [unclosed")


def test_yaml_is_loaded_safely():
    with pytest.raises(ValueError):
        Rubric.from_yaml("!!python/object/apply:os.system ['echo pwned']")


def _blocks_after(text: str, heading: str, stop: str) -> str:
    start = text.index(heading) + len(heading)
    return text[start : text.index(stop, start)]


def test_peer_readme_examples_load_unchanged(shared):
    """The JSON and YAML example rubrics of the `rubric` package's README load as written."""
    text = (shared / "peers" / "rubric-readme.txt").read_text()
    json_block = _blocks_after(text, "JSON Format", "YAML Format")
    yaml_block = _blocks_after(text, "YAML Format", "Requirements")
    rj, ry = Rubric.from_json(json_block), Rubric.from_yaml(yaml_block)
    assert [c.weight for c in rj] == [10.0, 8.0, -15.0]
    assert [c.requirement for c in rj] == [c.requirement for c in ry]
    # The README's from_dict examples (autorubric's quick example too) use the same keys.
    snippet = re.search(r"Rubric\.from_dict\(\[(.*?)\]\)", text, re.S)
    assert snippet is not None
    items = json.loads("[" + snippet.group(1) + "]")
    assert len(Rubric.from_dict(items)) == len(items)


def test_autorubric_written_rubrics_load(tmp_path: Path):
    ar = pytest.importorskip("autorubric")
    rub = ar.Rubric(
        [
            ar.Criterion(name="acc", weight=10.0, requirement="is accurate"),
            ar.Criterion(weight=-5.0, requirement="rambles"),
            ar.Criterion(
                name="sat",
                weight=3.0,
                requirement="satisfaction",
                options=[ar.CriterionOption(label=str(i), value=v) for i, v in enumerate([0.0, 0.5, 1.0], 1)],
                scale_type="ordinal",
            ),
        ]
    )
    ds = ar.RubricDataset(prompt="p", rubric=rub)
    ds.add_item(submission="s", description="d")
    data = json.loads(ds.to_json())
    r = Rubric.from_dict(data["rubric"])
    assert r.names == ("acc", "c2", "sat")
    assert r["sat"].labels == ("1", "2", "3")


def test_repr_html_escapes_and_shows_weights():
    r = Rubric.from_dict([{"name": "x<y", "requirement": "uses <b>bold</b>", "weight": -2}])
    h = r._repr_html_()
    assert "&lt;b&gt;bold&lt;/b&gt;" in h and "<b>bold</b>" not in h
    assert "\u22122" in h and "x&lt;y" in h  # a typographic minus, as the other tables print it
    assert repr(r) == "Rubric(1 criteria: x<y)"


def test_label_frame_values():
    r = Rubric.from_file(DATA / "autorubric_style.yaml")
    lf = r.label_frame()
    tone = lf.filter(lf["criterion"] == "tone")
    assert tone["label"].to_list() == ["rude", "neutral", "warm", "n/a"]
    assert tone["value"].to_list()[:3] == [0.0, 0.5, 1.0] and tone["value"][3] is None
    met = lf.filter((lf["criterion"] == "answer") & (lf["label"] == "CANNOT_ASSESS"))
    assert met["value"][0] is None
    assert math.isclose(lf.filter(lf["criterion"] == "padding")["worst_value"][0], 1.0)


def test_public_api_is_reexported():
    for name in ["Rubric", "Criterion", "Option", "score", "validate_verdicts", "VERDICT_SCHEMA", "LengthPenalty"]:
        assert hasattr(rt, name)
    with pytest.raises(AttributeError):
        rt.nope  # noqa: B018


@pytest.mark.parametrize("weight", ["10", True, False])
def test_weights_given_as_text_or_booleans_are_refused_not_coerced(weight):
    with pytest.raises(ValueError, match=r"criterion 0: field 'weight': weight must be a number"):
        Rubric.from_dict([{"requirement": "x", "weight": weight}])


def test_a_rubric_whose_weights_are_all_zero_is_refused():
    with pytest.raises(ValueError, match="every criterion has weight 0"):
        Rubric.from_dict([{"requirement": "x", "weight": 0}, {"requirement": "y", "weight": 0}])
    # a zero weight beside a non-zero one is fine (a criterion reported, not scored)
    assert len(Rubric.from_dict([{"requirement": "x", "weight": 0}, {"requirement": "y", "weight": 1}])) == 2

"""The public surface: what ``help()``, tab completion and static tools see."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
from pathlib import Path

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.grading.options import PAIR_OPTIONS, SINGLE_OPTIONS, GradeOptions

INIT = Path(rt.__file__)


def test_all_is_a_literal_list_of_names_that_resolve() -> None:
    tree = ast.parse(INIT.read_text())
    (node,) = [n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__all__"]
    names = ast.literal_eval(node.value)
    assert names == rt.__all__ and len(set(names)) == len(names)
    for name in names:
        assert getattr(rt, name) is not None, name


def test_grade_pairs_signature_lists_every_pairwise_option_with_its_default() -> None:
    renamed = {"column": "a", "pair_column": "b"}
    defaults = {renamed.get(f.name, f.name): f.default for f in dataclasses.fields(GradeOptions)}
    defaults = {k: v for k, v in defaults.items() if k not in SINGLE_OPTIONS}
    params = inspect.signature(rt.grade_pairs).parameters
    assert list(params)[:2] == ["df", "rubric"]
    for name, default in defaults.items():
        assert name in params, f"grade_pairs lacks {name}"
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        if name not in ("a", "b"):
            assert params[name].default == default, (name, params[name].default, default)
    assert (params["a"].default, params["b"].default) == ("response_a", "response_b")
    assert not set(SINGLE_OPTIONS) & set(params)
    assert {"batch", "batch_dir", "poll_interval"} <= set(params) and "output" not in set(params)
    # one signature, one return type: streaming pairs to parquet is its own function
    assert inspect.signature(rt.grade_pairs).return_annotation in ("pl.DataFrame", pl.DataFrame)
    stream = inspect.signature(rt.grade_pairs_to_parquet).parameters
    assert {"output", "batch_size", "retry_errors"} <= set(stream) and "batch" not in stream
    for name, default in defaults.items():
        assert stream[name].default == default or name in ("a", "b"), name


def test_grade_signature_lists_every_option_with_its_default() -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(GradeOptions) if f.name not in PAIR_OPTIONS}
    for fn in (rt.grade, rt.agrade, rt.submit_batch, rt.grade_to_parquet):
        params = inspect.signature(fn).parameters
        assert list(params)[:2] in (["df", "rubric"], ["source", "rubric"]), fn
        for name, default in defaults.items():
            assert name in params, f"{fn.__name__} lacks {name}"
            assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, (fn.__name__, name)
            assert params[name].default == default, (fn.__name__, name, params[name].default, default)
        assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()), fn
    ray = inspect.signature(rt.ray.grade).parameters  # Ray: its own cache per node, Ray Data's progress
    for name, default in defaults.items():  # and an id column it needs (no stable row numbers)
        if name not in ("model", "cache", "progress", "id_column"):
            assert ray[name].default == default and ray[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ray.values())
    grade = inspect.signature(rt.grade).parameters
    assert grade["column"].default == "submission" and grade["cache"].default is True
    assert {"batch", "batch_dir", "poll_interval"} <= set(grade) and "output" not in grade
    # one signature, one return type: streaming to parquet is its own function
    assert inspect.signature(rt.grade).return_annotation in ("pl.DataFrame", pl.DataFrame)
    stream = inspect.signature(rt.grade_to_parquet).parameters
    assert {"output", "batch_size", "retry_errors"} <= set(stream) and "batch" not in stream


def test_help_of_grade_names_its_parameters() -> None:
    doc = inspect.getdoc(rt.grade) or ""
    for name in ("column", "id_column", "model", "mode", "cache", "max_cost_usd", "progress", "Returns", "Example"):
        assert name in doc, name


def test_options_are_checked_before_any_call() -> None:
    import polars as pl

    df = pl.DataFrame({"submission": ["a"]})
    rubric = rt.Rubric.from_dict([{"requirement": "x"}])
    with pytest.raises(ValueError, match="mode must be one of"):
        rt.grade(df, rubric, model=rt.ScriptedJudge(), mode="per_sentence")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="distribution=True needs mode='per_criterion'"):
        rt.grade(df, rubric, model=rt.ScriptedJudge(), mode="holistic", distribution=True)
    ex = pl.DataFrame({"submission": ["a"], "criterion": ["c"], "verdict": ["MET"]})
    with pytest.raises(ValueError, match="no example submission has a verdict for every criterion"):
        rt.grade(df, rubric, model=rt.ScriptedJudge(), mode="holistic", examples=ex)  # c is not in the rubric
    with pytest.raises(ValueError, match="confidence=True asks for a confidence per verdict"):
        rt.grade(df, rubric, model=rt.ScriptedJudge(), mode="holistic", confidence=True)
    with pytest.raises(ValueError, match=r"output_constraints\[0\]"):
        rt.grade(df, rubric, model=rt.ScriptedJudge(), output_constraints=[{"id": "x", "kind": "word_count"}])
    with pytest.raises(ValueError, match="on_result= reports calls"):
        rt.grade(df, rubric, model=rt.ScriptedJudge(), batch=True, on_result=print)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colum'"):
        rt.grade(df, rubric, model=rt.ScriptedJudge(), colum="submission")  # type: ignore[arg-type]


def test_module_names_of_the_old_layout_are_gone() -> None:
    """rubrictools/moved.py (aliases such as rubrictools.reliability) was removed: nothing
    outside this repository used the 0.x module names."""
    for old in ("rubrictools.reliability", "rubrictools.batching", "rubrictools.moved"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
    assert rt.calibrate.fit is importlib.import_module("rubrictools.calibration").fit
    assert rt.ray.grade is importlib.import_module("rubrictools.grading.ray").grade


def test_every_public_name_has_a_runnable_example_and_every_class_its_parameters() -> None:
    """The API reference promises a summary, parameters and an example for each public name
    (before: 5 functions had no example, 11 classes described their fields in prose)."""
    import inspect

    import rubrictools.charts as charts

    names = [(rt, n) for n in rt.__all__] + [(charts, n) for n in charts.__all__]
    no_example = [n for mod, n in names if callable(obj := getattr(mod, n)) and ">>>" not in (obj.__doc__ or "")]
    assert not no_example, no_example
    classes = [n for mod, n in names if inspect.isclass(getattr(mod, n))]
    no_params = [n for n in classes if "Parameters\n" not in inspect.getdoc(getattr(rt, n, None) or getattr(charts, n))]
    assert not no_params, no_params
    # every function of rt.__all__ that takes arguments documents them in a Parameters section
    functions = [n for n in rt.__all__ if inspect.isfunction(inspect.unwrap(getattr(rt, n)))]
    takes = [n for n in functions if inspect.signature(getattr(rt, n)).parameters]
    undocumented = [n for n in takes if "Parameters\n" not in (inspect.getdoc(getattr(rt, n)) or "")]
    assert not undocumented, undocumented

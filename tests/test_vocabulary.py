"""One name per concept across the public API, read off ``inspect.signature``.

The public callables are everything in ``rubrictools.__all__`` and in the ``__all__`` of the
public sub-namespaces (``rt.charts``, ``rt.metrics``, ``rt.ppi``, ...). A new parameter that
spells a known concept another way fails here, naming the function and the name to use.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import polars as pl
import pytest

import rubrictools as rt
from rubrictools.deprecation import RubricToolsDeprecationWarning
from rubrictools.grading.options import JUDGE_SETTINGS

NAMESPACES = ("charts", "metrics", "ppi", "datasets", "calibrate", "widgets", "testing")

# concept -> the one name; and the spellings that must not come back
OTHER_SPELLINGS = {
    "bootstrap": "n_resamples",
    "n_boot": "n_resamples",
    "n_bootstrap": "n_resamples",
    "resamples": "n_resamples",
    "random_state": "seed",
    "confidence_level": "ci",
    "level_ci": "ci",
    "na": "cannot_assess",
    "unassessed": "cannot_assess",
    "missing": "on_error",
    "errors": "on_error",
    "grader": "model",
    "drafter": "proposer",
    "response_format": "structured_output",
}
# a class whose field has the name for another reason: rt.Option(na=True) marks an abstain option
FIELD_EXCEPTIONS = {("Option", "na")}
# **kwargs still taken (to be given explicit parameters); the list only shrinks
KWARGS_LEFT = {
    "calibrate.cross_validate",
    "calibrate.tune",
    "metrics.Estimate",
    "ray.grade",
    "widgets.calibrate",
    "widgets.label",
}
GRADING_ENTRY_POINTS = (
    "grade",
    "agrade",
    "grade_to_parquet",
    "grade_pairs",
    "grade_pairs_to_parquet",
    "submit_batch",
    "estimate_cost",
    "prompts",
)
DATA_PARAMETERS = ("verdicts", "df", "human", "prefs", "scores", "distributions")


def public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    for name in rt.__all__:
        obj = getattr(rt, name)
        if name in NAMESPACES or inspect.ismodule(obj):
            for sub in getattr(obj, "__all__", ()):
                member = getattr(obj, sub)
                if callable(member) and not inspect.ismodule(member):
                    yield f"{name}.{sub}", member
        elif callable(obj):
            yield name, obj


def signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C type without a signature
        return None


CALLABLES = [(n, s) for n, f in public_callables() if (s := signature(f)) is not None]


def test_the_walk_sees_the_whole_public_api() -> None:
    names = {n for n, _ in CALLABLES}
    assert len(CALLABLES) > 100
    assert {"grade", "agreement", "charts.met_rates", "metrics.cluster_weights", "ppi.ppi_estimate"} <= names


@pytest.mark.parametrize(("name", "sig"), CALLABLES, ids=[n for n, _ in CALLABLES])
def test_one_name_per_concept(name: str, sig: inspect.Signature) -> None:
    short = name.rsplit(".", 1)[-1]
    bad = {p: OTHER_SPELLINGS[p] for p in sig.parameters if p in OTHER_SPELLINGS and (short, p) not in FIELD_EXCEPTIONS}
    assert not bad, f"{name}: rename " + ", ".join(f"{p}= to {new}=" for p, new in bad.items())
    conf = sig.parameters.get("confidence")
    assert conf is None or conf.default is False, f"{name}(confidence=) is an interval level: call it ci="


@pytest.mark.parametrize(("name", "sig"), CALLABLES, ids=[n for n, _ in CALLABLES])
def test_no_keyword_facade(name: str, sig: inspect.Signature) -> None:
    if name in KWARGS_LEFT:
        return
    assert not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()), f"{name} takes **kwargs"


@pytest.mark.parametrize(("name", "sig"), CALLABLES, ids=[n for n, _ in CALLABLES])
def test_defaults_are_reproducible_and_alike(name: str, sig: inspect.Signature) -> None:
    seed = sig.parameters.get("seed")
    assert seed is None or seed.default == 0, f"{name}(seed={seed.default!r}): identical calls must agree"
    ci = sig.parameters.get("ci")
    assert ci is None or ci.default in (0.95, inspect.Parameter.empty), f"{name}(ci={ci.default!r})"


@pytest.mark.parametrize(("name", "sig"), CALLABLES, ids=[n for n, _ in CALLABLES])
def test_data_comes_before_the_rubric(name: str, sig: inspect.Signature) -> None:
    params = sig.parameters
    if "rubric" not in params or params["rubric"].kind is inspect.Parameter.KEYWORD_ONLY:
        return
    order = list(params)
    data = [order.index(p) for p in DATA_PARAMETERS if p in params and params[p].kind is not params[p].KEYWORD_ONLY]
    assert all(i < order.index("rubric") for i in data), f"{name}{sig}: the data comes first, the rubric after"


@pytest.mark.parametrize("name", GRADING_ENTRY_POINTS)
def test_the_judge_settings_live_on_the_judge(name: str) -> None:
    params = set(inspect.signature(getattr(rt, name)).parameters)
    assert not params & set(JUDGE_SETTINGS), f"{name} repeats judge settings {sorted(params & set(JUDGE_SETTINGS))}"
    assert not set(JUDGE_SETTINGS) - set(rt.Judge.model_fields) - {"response_format"}


V = pl.DataFrame({"id": list(range(30)), "criterion": "a", "verdict": ["MET", "UNMET", "MET"] * 10})
V = V.with_columns(
    value=(pl.col("verdict") == "MET").cast(pl.Float64), judge=pl.lit("j"), error=pl.lit(None, pl.String)
)
H = V.select("id", "criterion", label=pl.col("verdict"))
RUBRIC = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}])
RATERS = pl.concat([H.with_columns(rater=pl.lit("x")), H.with_columns(rater=pl.lit("y"), label=pl.lit("MET"))])


def _old_and_new() -> list[tuple[str, Callable[[dict[str, Any]], Any], dict[str, Any], dict[str, Any]]]:
    return [
        ("agreement", lambda kw: rt.agreement(V, H, RUBRIC, **kw), {"bootstrap": 50}, {"n_resamples": 50}),
        ("agreement", lambda kw: rt.agreement(V, H, RUBRIC, n_resamples=0, **kw), {"na": "as_worst"}, {}),
        (
            "assert_score",
            lambda kw: rt.assert_score(V, RUBRIC, at_least=0.1, **kw),
            {"confidence": 0.9, "errors": "zero"},
            {"ci": 0.9, "on_error": "zero"},
        ),
        ("inter_rater", lambda kw: rt.inter_rater(RATERS, RUBRIC, **kw), {"bootstrap": 40}, {"n_resamples": 40}),
    ]


@pytest.mark.parametrize(("name", "call", "old", "new"), _old_and_new(), ids=lambda x: x if isinstance(x, str) else "")
def test_old_names_work_for_one_release_and_the_warning_names_the_new_one(name, call, old, new) -> None:
    with pytest.warns(RubricToolsDeprecationWarning) as caught:
        got = call(old)
    text = " ".join(str(w.message) for w in caught)
    assert {w.filename for w in caught} == {__file__}  # the warning points at the caller's line
    for o in old:
        assert f"{name}({o}=)" in text and "removed in 0.4" in text
    for n in new:
        assert f"{n}=" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = call(new) if new else call({"cannot_assess": "as_worst"})
    assert got.equals(want)


def test_identical_calls_give_identical_intervals_by_default() -> None:
    a = rt.agreement(V, H, RUBRIC, n_resamples=200)
    b = rt.agreement(V, H, RUBRIC, n_resamples=200)
    assert a.equals(b)
    assert rt.inter_rater(RATERS, n_resamples=200).equals(rt.inter_rater(RATERS, n_resamples=200))
    c = rt.compare(V, V.with_columns(verdict=pl.lit("MET")), H, RUBRIC, metric="accuracy", n_resamples=200)
    assert c.equals(rt.compare(V, V.with_columns(verdict=pl.lit("MET")), H, RUBRIC, metric="accuracy", n_resamples=200))


def test_both_the_old_and_the_new_name_is_an_error_naming_both() -> None:
    with pytest.raises(TypeError, match=r"both bootstrap= \(deprecated\) and n_resamples="):
        rt.agreement(V, H, RUBRIC, bootstrap=10, n_resamples=10)


def test_judge_settings_given_to_grade_become_a_judge_with_a_warning() -> None:
    df = pl.DataFrame({"submission": ["hello", "bye"]})
    server = rt.testing.FakeLLMServer()
    with server, pytest.warns(RubricToolsDeprecationWarning, match=r"grade\(api_base=, api_key=, temperature=\)"):
        old = rt.grade(
            df,
            RUBRIC,
            model="openai/m",
            api_base=server.url,
            api_key="sk-x",
            temperature=0.0,
            cache=False,
            progress=False,
            record=False,
        )
    with server:
        judge = rt.Judge(model="openai/m", api_base=server.url, api_key="sk-x", temperature=0.0)
        new = rt.grade(df, RUBRIC, model=judge, cache=False, progress=False, record=False)
    assert old.select("id", "verdict").equals(new.select("id", "verdict"))
    with pytest.raises(ValueError, match=r"set them on the rt.Judge\(...\) itself \(grade\(model=\) holds Judge"):
        rt.grade(df, RUBRIC, model=judge, temperature=0.5, progress=False)
    with pytest.raises(ValueError, match="holds ScriptedJudge"):
        rt.grade(df, RUBRIC, model=rt.ScriptedJudge(), temperature=0.5, progress=False)


def test_the_rubric_first_is_read_with_a_warning() -> None:
    with pytest.warns(RubricToolsDeprecationWarning, match="the data comes first"):
        old = rt.rubric_report(RUBRIC, V, H)
    assert old.table.equals(rt.rubric_report(V, H, RUBRIC).table)


def test_draft_rubric_takes_the_proposer_and_the_model_as_improve_does() -> None:
    ex = pl.DataFrame({"submission": ["hello", "bye"], "label": ["good", "bad"]})
    drafter = lambda msgs: {"criteria": [{"name": "a", "requirement": "Says hello"}]}  # noqa: E731  # a one-line scripted proposer
    judge = rt.ScriptedJudge(rule=lambda t, c: "MET" if "hello" in t else "UNMET")
    with pytest.warns(RubricToolsDeprecationWarning, match=r"proposer=drafter, model=judge"):
        old = rt.draft_rubric("Greet", model=drafter, grader=judge, examples=ex, cache=False)
    new = rt.draft_rubric("Greet", proposer=drafter, model=judge, examples=ex, cache=False)
    assert old.discrimination.equals(new.discrimination)


def test_judge_response_format_is_read_as_structured_output() -> None:
    with pytest.warns(RubricToolsDeprecationWarning, match=r"structured_output='prompt'"):
        j = rt.Judge(model="openai/m", response_format="text")
    assert j.structured_output == "prompt"
    assert "response_format" not in rt.Judge.model_fields


def test_judge_settings_are_checked_alike_for_the_scripted_judge() -> None:
    df = pl.DataFrame({"submission": ["hello"]})
    with pytest.raises(ValueError, match="temperature must be between 0 and 2"):
        rt.grade(df, RUBRIC, model="rubrictools/scripted", temperature=-2, progress=False, record=False)
    with pytest.raises(ValueError, match="do not apply to it"):  # they were silently dropped before
        rt.grade(df, RUBRIC, model="rubrictools/scripted", temperature=0.5, progress=False, record=False)
    with pytest.warns(RubricToolsDeprecationWarning, match=r"pass model=rt.Judge\(model=..., structured_output=...\)"):
        p = rt.prompts(df, RUBRIC, model="openai/gpt-4.1-mini", response_format="text")
    assert p.height == 1


def test_bad_resampling_settings_name_the_field() -> None:
    for kw, field in [
        ({"n_resamples": -1}, "n_resamples"),
        ({"n_resamples": True}, "n_resamples"),
        ({"n_resamples": 10.5}, "n_resamples"),
        ({"seed": "x"}, "seed"),
        ({"ci": 1.5, "n_resamples": 0}, "ci"),
    ]:
        with pytest.raises(ValueError, match=rf"^{field} must be"):
            rt.agreement(V, H, RUBRIC, **kw)
    with pytest.raises(ValueError, match=r"^seed must be"):
        rt.assert_score(V, RUBRIC, at_least=0.1, seed="x")
    with pytest.raises(TypeError, match="seed must be an int"):
        rt.grade(pl.DataFrame({"submission": ["a"]}), RUBRIC, model=rt.ScriptedJudge(), seed="x", progress=False)
    with pytest.raises(TypeError, match="confidence must be True or False"):
        rt.grade(pl.DataFrame({"submission": ["a"]}), RUBRIC, model=rt.ScriptedJudge(), confidence=0.9)


@pytest.mark.parametrize(("name", "sig"), CALLABLES, ids=[n for n, _ in CALLABLES])
def test_resampling_parameters_are_documented(name: str, sig: inspect.Signature) -> None:
    obj = getattr(rt, name) if "." not in name else getattr(getattr(rt, name.split(".")[0]), name.split(".")[1])
    doc = inspect.getdoc(obj) or ""
    if not {"n_resamples", "ci"} & set(sig.parameters) or inspect.isclass(obj):
        return  # only the functions that compute intervals (a grading seed orders shuffled options)
    undocumented = [p for p in ("n_resamples", "ci", "seed") if p in sig.parameters and p not in doc]
    assert not undocumented, f"{name}: {undocumented} not in the docstring"

"""Reflection prompts: one per kind of component by default, replaceable by kind or by name."""

from __future__ import annotations

import pytest

import rubrictools as rt
from rubrictools.evolution import REFLECTION_TEMPLATE, REFLECTION_TEMPLATES
from rubrictools.evolution.reflection import templates_for
from tests.evolution.test_evolve import DF, HUMAN, JUDGE, START, Reflector

pytest.importorskip("gepa")

COMPONENTS = ["criterion:cites", "criterion:greets", "guidelines", "weights"]


def test_each_kind_of_component_gets_its_own_prompt_and_a_mapping_overrides_by_name_then_kind() -> None:
    assert templates_for(None, COMPONENTS) == {
        "criterion:cites": REFLECTION_TEMPLATES["requirement"],
        "criterion:greets": REFLECTION_TEMPLATES["requirement"],
        "guidelines": REFLECTION_TEMPLATES["guidelines"],
        "weights": REFLECTION_TEMPLATES["weights"],
    }
    mine = "Mine: <curr_param> <side_info>"
    by_name = templates_for({"criterion:greets": mine, "requirement": "R <curr_param> <side_info>"}, COMPONENTS)
    assert by_name["criterion:greets"] == mine and by_name["criterion:cites"].startswith("R ")
    assert by_name["guidelines"] == REFLECTION_TEMPLATES["guidelines"]
    assert templates_for(REFLECTION_TEMPLATE, COMPONENTS) == REFLECTION_TEMPLATE
    for kind, text in REFLECTION_TEMPLATES.items():
        assert "<curr_param>" in text and "<side_info>" in text and text.rstrip().endswith("``` block."), kind


def test_the_reflection_model_reads_the_prompt_of_the_component_it_rewrites() -> None:
    prompts: list[str] = []

    def echo(prompt: str) -> str:  # proposes the current text again, so GEPA cycles through every component
        prompts.append(prompt)
        return "```\n" + (prompt.split("```", 2)[1].strip() or "Read every submission whole.") + "\n```"

    mine = "REQUIREMENT PROMPT\n```\n<curr_param>\n```\n<side_info>\nReply inside one ``` block."
    rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=echo, reflection_template={"requirement": mine},
                     max_metric_calls=120, minibatch_size=4, n_resamples=20, cache=False)  # fmt: skip
    firsts = [p.split("\n", 1)[0] for p in prompts]
    assert "REQUIREMENT PROMPT" in firsts  # the criteria's own prompt
    guidelines = [p for p in prompts if "general guidelines of a grading rubric" in p]  # the default for guidelines
    assert guidelines and not any(p.startswith("REQUIREMENT PROMPT") for p in guidelines)


def test_bad_templates_are_refused_naming_the_key() -> None:
    kw = {"model": JUDGE, "reflection_model": Reflector(), "cache": False}
    t = "<curr_param> <side_info> ```"
    for template, message in [
        ({"bogus": t}, r"key 'bogus' is not a kind \['guidelines', 'requirement'\] or a component this run evolves"),
        ({"criterion:Cites": t}, r"did you mean 'criterion:cites'\?"),
        ({"cites": t}, r"did you mean 'criterion:cites'\?"),
        ({"criterion:nonexistent": t}, "names no criterion whose text this run evolves"),
        ({"weights": t}, "names the weights, which are evolved only with evolve_weights=True"),
        ({"guidelines": "no placeholders"}, r"reflection_template\['guidelines'\] must hold both <curr_param>"),
        ("<curr_param> <side_info> reply in plain text", r"must ask for the new text inside a ``` block"),
    ]:
        with pytest.raises(ValueError, match=message):
            rt.evolve_rubric(DF, HUMAN, START, reflection_template=template, **kw)
    with pytest.raises(TypeError, match=r"reflection_template\['requirement'\] must be text"):
        rt.evolve_rubric(DF, HUMAN, START, reflection_template={"requirement": 3}, **kw)

"""Rubric evolution with GEPA (rubrify's ``evolve_rubric``): :func:`evolve_rubric`.

The rubric's texts become GEPA's candidate (:mod:`~rubrictools.evolution.components`), graded
through rubrictools' cached grading against human labels (:mod:`~rubrictools.evolution.adapter`),
rewritten by a reflection model (:mod:`~rubrictools.evolution.reflection`, one prompt per kind of
component), optionally through a proposal quality gate (:class:`ProposalGate`) and a
multi-objective acceptance rule (:mod:`~rubrictools.evolution.acceptance`), the gate's rubric,
the prompts and the tolerances optionally evolving in the same run
(:mod:`~rubrictools.evolution.coevolution`, rubrify v3's co-evolution); the gain is claimed on
held-out submissions only (:mod:`~rubrictools.evolution.evolve`). Needs the ``[evolve]``
extra (``pip install "rubrictools[evolve]"``: the ``gepa`` package).
"""

from rubrictools.evolution.evolve import RubricEvolution, evolve_rubric
from rubrictools.evolution.gate import GATE_RUBRIC, ProposalGate
from rubrictools.evolution.reflection import REFLECTION_TEMPLATE, REFLECTION_TEMPLATES, SETTING_TEMPLATES

__all__ = [
    "GATE_RUBRIC",
    "REFLECTION_TEMPLATE",
    "REFLECTION_TEMPLATES",
    "SETTING_TEMPLATES",
    "ProposalGate",
    "RubricEvolution",
    "evolve_rubric",
]

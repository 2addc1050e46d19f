"""Rubric evolution with GEPA (rubrify's ``evolve_rubric``): :func:`evolve_rubric`.

The rubric's texts become GEPA's candidate (:mod:`~rubrictools.evolution.components`), graded
through rubrictools' cached grading against human labels (:mod:`~rubrictools.evolution.adapter`),
rewritten by a reflection model (:mod:`~rubrictools.evolution.reflection`); the gain is claimed
on held-out submissions only (:mod:`~rubrictools.evolution.evolve`). Needs the ``[evolve]``
extra (``pip install "rubrictools[evolve]"``: the ``gepa`` package).
"""

from rubrictools.evolution.evolve import RubricEvolution, evolve_rubric
from rubrictools.evolution.reflection import REFLECTION_TEMPLATE

__all__ = ["REFLECTION_TEMPLATE", "RubricEvolution", "evolve_rubric"]

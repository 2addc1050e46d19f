"""The colours every chart and table draws with, in one place, so one colour keeps one meaning
across the package and no chart opposes red and green.

The convention: the judge (or any LLM) in blue, people in grey, calibrated or corrected values in
orange; what went wrong (an error, a bad verdict, the weakest criterion) in a dark wine that no
reader takes for that orange. Other categories take colours of the Okabe-Ito palette, chosen to stay
distinct for readers with the common colour-vision deficiencies; where colour carries a meaning a chart adds a
second cue (a shape, a dash, a printed value). No module of rubrictools writes a colour literal
outside this one (``tests/test_palette.py`` fails if one does).

>>> JUDGE, PEOPLE, CALIBRATED
('#4c78a8', '#9e9e9e', '#f58518')
"""

from __future__ import annotations

__all__ = [
    "BLUISH_GREEN",
    "CALIBRATED",
    "CATEGORIES",
    "EMPTY",
    "INK",
    "INK_DARK",
    "INK_MUTED",
    "JUDGE",
    "JUDGE_DARK",
    "JUDGE_LIGHT",
    "NEUTRAL_DARK",
    "NEUTRAL_LIGHT",
    "OKABE_BLUE",
    "OKABE_ORANGE",
    "PEOPLE",
    "PEOPLE_LIGHT",
    "PINK",
    "PURPLE",
    "REFERENCE",
    "SAND",
    "SIENNA",
    "SKY",
    "WEIGHT_NEGATIVE",
    "WEIGHT_POSITIVE",
    "WINE",
    "YELLOW",
]

# the three roles every chart keeps
JUDGE = "#4c78a8"  #: the judge, or any LLM
JUDGE_LIGHT = "#9ecae9"  #: the judge before a change, a second judge, an unclear change
JUDGE_DARK = "#1f4e79"  #: a clear change, an inner node, a point on a judge-blue bar
PEOPLE = "#9e9e9e"  #: people: raters, the human ceiling, labels
PEOPLE_LIGHT = "#c7c7c7"  #: people's bars beside the judge's
CALIBRATED = "#f58518"  #: calibrated, corrected or "after" values

# other categories: Okabe-Ito, distinct under the common colour-vision deficiencies
OKABE_BLUE = "#0072b2"  #: Okabe-Ito blue
OKABE_ORANGE = "#e69f00"  #: Okabe-Ito orange
SKY = "#56b4e9"  #: Okabe-Ito sky blue
BLUISH_GREEN = "#009e73"  #: Okabe-Ito bluish green
YELLOW = "#f0e442"  #: Okabe-Ito yellow
WINE = "#882255"  #: errors, a bad outcome, the weakest reading: Paul Tol's wine, never read as calibrated orange
PINK = "#cc79a7"  #: Okabe-Ito reddish purple
PURPLE = "#9467bd"  #: a muted purple
SIENNA = "#8c564b"  #: a muted brown
SAND = "#d4c4a8"  #: "no call": grey is kept for people

# neutrals for marks that carry no category
NEUTRAL_LIGHT = "#bdbdbd"  #: a light grey for marks with no category (not people)
NEUTRAL_DARK = "#525252"  #: a dark grey for marks with no category
EMPTY = "#f0f0f0"  #: a cell with no value (a matrix's diagonal)
REFERENCE = "#888"  #: dashed reference lines: zero, chance, a mean
INK = "#333"  #: printed values and labels
INK_DARK = "#222"  #: interval lines drawn over bars, tree edges
INK_MUTED = "#666"  #: a note that explains an empty panel or a reference line

# a rubric's weights in its HTML table, always printed with their sign as well
WEIGHT_POSITIVE = OKABE_BLUE  #: a positive weight
WEIGHT_NEGATIVE = PINK  #: a negative weight (a penalty): reddish purple, not the orange of "calibrated"

CATEGORIES = (JUDGE_LIGHT, JUDGE, CALIBRATED, BLUISH_GREEN, PINK, SKY, OKABE_ORANGE, PURPLE)
"""The order in which a chart colours categories it knows nothing about (systems, judges, runs)."""

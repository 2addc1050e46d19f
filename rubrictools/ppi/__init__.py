"""Trustworthy numbers from few human labels: prediction-powered inference and active labelling.

- :func:`ppi_estimate`: the human-scale pass rate / mean / score with a valid interval, from a
  judge on every item and people on a random few (PPI, PPI++, active inference);
- :func:`choose_to_label`: which items to label, with the inclusion probabilities that keep
  the estimate unbiased;
- :func:`width_curve`: interval width against the number of labels, classical vs PPI vs naive.
"""

from __future__ import annotations

from rubrictools.ppi.active import choose_to_label, uncertainty
from rubrictools.ppi.curve import width_curve
from rubrictools.ppi.estimate import ppi_estimate

__all__ = ["choose_to_label", "ppi_estimate", "uncertainty", "width_curve"]

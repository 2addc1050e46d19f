"""Published worked examples, from the project's own copy of the numbers (tests/data)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rubrictools import metrics as m
from tests.conftest import DATA

REF = json.loads((DATA.parents[1] / "datasets" / "agreement_reference" / "examples.json").read_text())


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_2011_worked_example(level: str) -> None:
    ex = REF["krippendorff2011"]
    ratings = np.array(ex["ratings"], dtype=float)
    assert round(m.krippendorff_alpha(ratings, level=level), 3) == ex["expected"]["alpha"][level]


def test_gwet_coefficients_on_krippendorff_data() -> None:
    ex = REF["krippendorff2011"]
    r = np.array(ex["ratings"], dtype=float)
    assert m.fleiss_kappa(r) == pytest.approx(ex["expected"]["gwet_fleiss_kappa"], abs=5e-6)
    assert m.gwet_ac1(r) == pytest.approx(ex["expected"]["gwet_ac1"], abs=5e-6)
    assert m.percent_agreement(r) == pytest.approx(ex["expected"]["percent_agreement"], abs=5e-6)


def test_fleiss_1971_diagnoses() -> None:
    ex = REF["fleiss1971"]
    assert round(m.fleiss_kappa(ex["ratings"]), 3) == ex["expected"]["fleiss_kappa"]


def test_fleiss_wikipedia_counts() -> None:
    ex = REF["fleiss_wikipedia"]
    assert round(m.fleiss_kappa(counts=ex["counts"]), 3) == ex["expected"]["fleiss_kappa"]


def test_cohen_sas_table() -> None:
    ex = REF["cohen_sas"]
    t = np.array(ex["table"])
    rows, cols = np.indices(t.shape)
    y1 = np.repeat(rows.ravel(), t.ravel())
    y2 = np.repeat(cols.ravel(), t.ravel())
    k = m.cohen_kappa(y1, y2, labels=[0, 1, 2])
    assert round(k, 4) == ex["expected"]["cohen_kappa"]
    assert round(k.se, 4) == ex["expected"]["cohen_kappa_ase"]
    assert (
        round(m.cohen_kappa(y1, y2, labels=[0, 1, 2], weights="linear"), 4) == ex["expected"]["weighted_kappa_linear"]
    )


@pytest.mark.parametrize("kind", ["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"])
def test_shrout_fleiss_1979(kind: str) -> None:
    ex = REF["shrout_fleiss1979"]
    assert round(m.icc(ex["ratings"], kind=kind), 2) == ex["expected"][kind]


def test_shared_copy_matches_project_copy(shared) -> None:
    """The numbers in tests/data are the ones in ../shared (skips without it)."""
    expected = json.loads((shared / "datasets" / "agreement_reference" / "EXPECTED.json").read_text())
    assert (
        expected["krippendorff2011_reliability_data.csv"]["krippendorff_alpha"]
        == REF["krippendorff2011"]["expected"]["alpha"]
    )
    assert (
        expected["fleiss1971_diagnoses_30patients_6raters.csv"]["fleiss_kappa"]
        == REF["fleiss1971"]["expected"]["fleiss_kappa"]
    )
    lines = (shared / "datasets" / "agreement_reference" / "cohen_sas_3x3_contingency.csv").read_text().split()
    table = [[int(v) for v in line.split(",")[1:]] for line in lines[1:]]
    assert table == REF["cohen_sas"]["table"]

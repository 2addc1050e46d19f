"""Notebooks are committed without outputs (nbmake executes them in CI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ must hold the quickstart"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_no_outputs(path: Path):
    nb = json.loads(path.read_text())
    dirty = [
        i
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))
    ]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; strip them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_cell_has_an_id(path: Path):
    """nbformat 4.5 cells carry an id; nbformat warns on every read without one (and says it
    will become an error)."""
    nb = json.loads(path.read_text())
    assert (nb["nbformat"], nb["nbformat_minor"]) >= (4, 5)
    missing = [i for i, c in enumerate(nb["cells"]) if "id" not in c]
    assert not missing, f"{path.name}: cells {missing} have no id (nbformat.validator.normalize adds them)"
    ids = [c["id"] for c in nb["cells"]]
    assert len(set(ids)) == len(ids), f"{path.name}: repeated cell ids"

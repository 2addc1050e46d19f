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


def test_the_export_template_wraps_code_and_left_aligns_text_columns(tmp_path: Path) -> None:
    """README's export command (notebooks/offline_export.json) uses notebooks/templates/rubrictools:
    long code lines wrap instead of being cut at the cell's edge, and polars' text columns are
    left-aligned (its HTML right-aligns every cell)."""
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbconvert")
    import subprocess
    import sys

    import polars as pl

    root = Path(__file__).resolve().parents[1]
    config = json.loads((root / "notebooks" / "offline_export.json").read_text())
    assert config["HTMLExporter"]["template_name"] == "rubrictools"
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x = 1  # " + "a long comment " * 12)
    table = pl.DataFrame({"name": ["a long text value"], "n": [3]})
    cell.outputs = [nbformat.v4.new_output("execute_result", {"text/html": table._repr_html_()}, execution_count=1)]
    nb.cells = [cell]
    path = tmp_path / "t.ipynb"
    nbformat.write(nb, path)
    cmd = [sys.executable, "-m", "jupyter", "nbconvert", "--config", "notebooks/offline_export.json", "--to", "html"]
    subprocess.run([*cmd, str(path), "--output-dir", str(tmp_path)], cwd=root, check=True, capture_output=True)
    page = (tmp_path / "t.html").read_text()
    assert "white-space: pre-wrap" in page and "rt-text" in page and "a long text value" in page

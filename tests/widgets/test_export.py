"""An exported notebook shows each widget's static snapshot in one step: nbconvert with
``notebooks/offline_export.json`` prefers a widget's ``text/html`` snapshot to its live view,
which offline (no CDN for the widget manager) would draw nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rubrictools as rt

pytest.importorskip("ipywidgets")
nbconvert = pytest.importorskip("nbconvert")
nbformat = pytest.importorskip("nbformat")

CONFIG = Path(__file__).resolve().parents[2] / "notebooks" / "offline_export.json"
VIEW = "application/vnd.jupyter.widget-view+json"


def _notebook(bundle: dict) -> object:
    """A notebook with one executed cell showing ``bundle``, widget state stored as nbclient
    stores it (so nbconvert's default would choose the live view)."""
    nb = nbformat.v4.new_notebook()
    out = nbformat.v4.new_output("display_data", data={k: v for k, v in bundle.items() if k != "text/plain"})
    cell = nbformat.v4.new_code_cell("w", outputs=[out], execution_count=1)
    nb.cells.append(cell)
    state = {
        bundle[VIEW]["model_id"]: {
            "model_name": "VBoxModel",
            "model_module": "@jupyter-widgets/controls",
            "model_module_version": "2.0.0",
            "state": {},
        }
    }
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {"state": state, "version_major": 2, "version_minor": 0}
    }
    return nb


def _export(nb: object, config: dict | None) -> str:
    from traitlets.config import Config

    body, _ = nbconvert.HTMLExporter(config=Config(config or {})).from_notebook_node(nb)
    return body


def test_the_offline_export_config_shows_the_snapshot_where_the_default_shows_nothing() -> None:
    support = rt.datasets.load("demo_support")
    w = rt.widgets.label(support.submissions.head(2), support.rubric, rater="me")
    nb = _notebook(w._repr_mimebundle_())
    default = _export(nb, None)
    assert '<script type="application/vnd.jupyter.widget-view+json">' in default and "Labelling" not in default
    offline = _export(nb, json.loads(CONFIG.read_text()))
    assert "Labelling" in offline and '<script type="application/vnd.jupyter.widget-view+json">' not in offline


def test_the_config_keeps_every_other_output_kind() -> None:
    # same list as nbconvert's HTML default, but text/html first: charts (svg) and the rest survive
    from nbconvert import HTMLExporter

    ours = json.loads(CONFIG.read_text())["NbConvertBase"]["display_data_priority"]
    theirs = HTMLExporter().default_config.NbConvertBase.display_data_priority
    assert sorted(ours) == sorted(theirs) and ours[0] == "text/html"

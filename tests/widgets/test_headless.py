"""The calibration widget executes headless (nbclient: ``nbconvert --execute``, nbmake) without
the message pattern that can hang it.

nbclient mimics every ``ipywidgets.Output`` and answers each output captured inside
``with output:`` with a message on the shell channel, while it awaits the cell's reply on that
same channel; under CPU load the reply's wake-up is then sometimes lost and the notebook hangs
for good (jupyter/nbclient#312; ``benchmarks/notebook_soak.py`` reproduces it: 5 of 10 runs of a
30-cell Output notebook hung beside two busy loops, 0 of 10 when the outputs were set as state).
The widget sets its chart as the Output's state instead, so nbclient has nothing to answer.
"""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")
nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

CELLS = [
    "import rubrictools as rt\n"
    "s = rt.datasets.load('demo_support')\n"
    "cal = rt.widgets.calibrate(s.verdicts, s.human, s.rubric)\n"
    "cal",
    "cal.criterion.value = 'polite'\ncal.judge_right_button.click()\ncal.next_button.click()",
    "cal.human_right_button.click()\nlen(cal.chart_out.outputs)",
]


def test_calibration_widget_sends_nothing_back_on_the_shell_channel(monkeypatch) -> None:
    from nbclient import output_widget

    sent: list[dict] = []
    monkeypatch.setattr(output_widget.OutputWidget, "send", lambda self, data=None, **_: sent.append(data))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True).execute()
    assert sent == []
    assert nb.cells[-1].outputs[-1]["data"]["text/plain"] == "1"
    # the chart is in the stored widget state, so an export with that state shows it
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"].values()
    outputs = [s["state"]["outputs"] for s in states if s["model_name"] == "OutputModel"]
    assert len(outputs) == 1 and len(outputs[0]) == 1
    assert outputs[0][0]["output_type"] == "display_data" and "text/plain" in outputs[0][0]["data"]

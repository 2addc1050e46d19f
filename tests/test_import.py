"""`import rubrictools` must not pull in the heavy optional stacks."""

from __future__ import annotations

import subprocess
import sys


def test_import_is_lazy():
    code = (
        "import sys, rubrictools as rt; r = rt.Rubric.from_dict([{'requirement': 'x'}]); "
        "heavy = [m for m in ('litellm', 'altair', 'ipywidgets', 'openai', 'pandas', 'scipy') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_grading_entry_points_do_not_load_litellm():
    """Building a plan with a scripted judge needs neither litellm nor altair."""
    code = (
        "import sys, polars as pl, rubrictools as rt; "
        "r = rt.Rubric.from_dict([{'requirement': 'x'}]); "
        "rt.grade(pl.DataFrame({'submission': ['a']}), r, model=rt.ScriptedJudge(), progress=False); "
        "print(','.join(m for m in ('litellm', 'altair', 'ipywidgets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""

"""A real browser clicks a widget and the click reaches Python.

Voila serves a notebook on 127.0.0.1 that shows the labelling widget; headless Chromium
(Debian's package) driven by Playwright clicks "1: MET"; the test then reads the label that
the Python callback appended to the JSON-lines file, and the progress text the kernel sent
back to the page. Skipped when Chromium, Playwright or Voila is not installed
(``pip install -e ".[browser]"`` and ``apt-get install chromium``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

pytest.importorskip("playwright.sync_api")
pytest.importorskip("voila")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed"),
    pytest.mark.timeout(180),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"voila exited early: {proc.stdout.read() if proc.stdout else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError("voila did not start")


@contextlib.contextmanager
def _voila_page(tmp_path: Path, source: str) -> Iterator[Any]:
    """A Chromium page showing a notebook of one cell (``source``) served by Voila."""
    import nbformat
    from playwright.sync_api import sync_playwright

    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, tmp_path / "page.ipynb")
    port = _free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "voila",
            "page.ipynb",
            "--no-browser",
            f"--port={port}",
            "--Voila.ip=127.0.0.1",
            "--Voila.tornado_settings={'disable_check_xsrf': True}",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        _wait_for_port(port, proc)
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
            )
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/", timeout=90_000)
            yield page
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_click_in_chromium_reaches_python(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    source = (
        "import pathlib\n"
        "import rubrictools as rt\n"
        "d = rt.datasets.load('demo_support')\n"
        f"lw = rt.widgets.label(d.submissions.head(2), d.rubric, rater='browser', path=pathlib.Path({str(out)!r}))\n"
        "lw.widget"
    )
    with _voila_page(tmp_path, source) as page:
        button = page.get_by_role("button", name="1: MET")
        button.wait_for(timeout=90_000)
        assert page.get_by_text("0 / 10").count() >= 1
        button.click()
        page.get_by_text("1 / 10").first.wait_for(timeout=30_000)  # the kernel's update reached the page
    deadline = time.time() + 10
    while time.time() < deadline and not (out.exists() and out.read_text().strip()):
        time.sleep(0.1)
    rec = json.loads(out.read_text().splitlines()[0])
    assert (rec["id"], rec["criterion"], rec["label"], rec["rater"]) == ("t000", "answers_question", "MET", "browser")


def test_calibration_chart_redraws_in_chromium(tmp_path: Path) -> None:
    """The calibration widget sets its chart as its Output's state (see
    ``tests/widgets/test_headless.py``); a real frontend draws that state and redraws it
    after a decision. Charts render as inline SVG (vl-convert) since no CDN is reachable."""
    pytest.importorskip("vl_convert")
    source = (
        "import altair as alt\n"
        "import rubrictools as rt\n"
        "alt.renderers.enable('svg')\n"
        "d = rt.datasets.load('demo_support')\n"
        "cal = rt.widgets.calibrate(d.verdicts, d.human, d.rubric, submissions=d.submissions)\n"
        "cal.widget"
    )
    with _voila_page(tmp_path, source) as page:
        chart = page.locator(".widget-output img").first  # JupyterLab's renderer shows SVG as an <img>
        chart.wait_for(timeout=90_000)
        before = chart.get_attribute("src") or ""
        assert before.startswith("data:image/svg+xml") and "now (filled)" in unquote(before)
        page.get_by_role("button", name="judge right").click()
        deadline = time.time() + 30
        while time.time() < deadline and page.locator(".widget-output img").first.get_attribute("src") == before:
            time.sleep(0.2)
        assert page.locator(".widget-output img").first.get_attribute("src") != before  # redrawn
        assert page.locator(".widget-output img").count() == 1  # replaced, not appended

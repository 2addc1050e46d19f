"""A real browser clicks a widget and the click reaches Python.

Voila serves a notebook on 127.0.0.1 that shows the labelling widget; headless Chromium
(Debian's package) driven by Playwright clicks "1: MET"; the test then reads the label that
the Python callback appended to the JSON-lines file, and the progress text the kernel sent
back to the page. Skipped when Chromium, Playwright or Voila is not installed
(``pip install -e ".[browser]"`` and ``apt-get install chromium``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

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


def test_click_in_chromium_reaches_python(tmp_path: Path) -> None:
    import nbformat
    from playwright.sync_api import sync_playwright

    out = tmp_path / "labels.jsonl"
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import pathlib\n"
                "import rubrictools as rt\n"
                "d = rt.datasets.load('demo_support')\n"
                f"lw = rt.widgets.label(d.submissions.head(2), d.rubric, rater='browser', "
                f"path=pathlib.Path({str(out)!r}))\n"
                "lw.widget"
            )
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, tmp_path / "label.ipynb")
    port = _free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "voila",
            "label.ipynb",
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
            button = page.get_by_role("button", name="1: MET")
            button.wait_for(timeout=90_000)
            assert page.get_by_text("0 / 10").count() >= 1
            button.click()
            page.get_by_text("1 / 10").first.wait_for(timeout=30_000)  # the kernel's update reached the page
            browser.close()
        deadline = time.time() + 10
        while time.time() < deadline and not (out.exists() and out.read_text().strip()):
            time.sleep(0.1)
        rec = json.loads(out.read_text().splitlines()[0])
        assert (rec["id"], rec["criterion"], rec["label"], rec["rater"]) == (
            "t000",
            "answers_question",
            "MET",
            "browser",
        )
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()

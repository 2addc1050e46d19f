"""Execute notebooks many times in a row and count the runs that hang or fail.

Run: python benchmarks/notebook_soak.py [--runs 20] [--load 2] [--limit 120] [notebooks ...]

Each run is a plain ``jupyter nbconvert --to notebook --execute`` in its own process group; a run
that has not finished after ``--limit`` seconds counts as a hang and its whole group (nbconvert and
its kernel) is killed, so no kernel is left behind. ``--load K`` keeps K busy-loop processes
running beside the notebooks (CPU starvation is what made widget notebooks hang: see
``rubrictools.widgets.adjudication``). Without notebook arguments every ``notebooks/*.ipynb`` runs;
``--mechanism`` runs two generated 30-cell notebooks instead, one that displays into an
``ipywidgets.Output`` inside ``with output:`` (what can hang under load) and one that sets the
Output's ``outputs`` state (what the widgets do).

Prints one line per notebook: runs, passed, hung, failed, median and max seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run_once(notebook: Path, out_dir: str, limit: float) -> tuple[str, float]:
    cmd = [
        sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", str(notebook),
        "--output-dir", out_dir, "--ExecutePreprocessor.timeout=-1",
    ]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=notebook.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        _, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "hung", time.perf_counter() - start
    outcome = "passed" if proc.returncode == 0 else "failed"
    if outcome == "failed":
        print(err.decode(errors="replace")[-2000:], file=sys.stderr)
    return outcome, time.perf_counter() - start


def _mechanism_notebooks(folder: Path) -> list[Path]:
    import nbformat

    setup = "import ipywidgets as w\nfrom IPython.display import HTML, display\nout = w.Output()\ndisplay(out)"
    ways = {
        "display_in_output": "out.clear_output(wait=True)\nwith out:\n    display(HTML('<b>{i}</b>'))",
        "set_output_state": "out.outputs = ({{'output_type': 'display_data', 'metadata': {{}}, "
        "'data': {{'text/html': '<b>{i}</b>', 'text/plain': '{i}'}}}},)",
    }
    paths = []
    for name, cell in ways.items():
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(c) for c in [setup, *(cell.format(i=i) for i in range(30))]]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        paths.append(folder / f"{name}.ipynb")
        nbformat.write(nb, paths[-1])
    return paths


@contextlib.contextmanager
def busy_loops(k: int) -> Iterator[None]:
    """``k`` busy-loop processes running for the duration of the block (a loaded machine)."""
    loaders = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(k)]
    try:
        yield
    finally:
        for p in loaders:
            p.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--load", type=int, default=0, help="busy-loop processes beside the runs")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds before a run counts as hung")
    parser.add_argument("--mechanism", action="store_true", help="soak the two generated Output notebooks")
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory()
    if args.mechanism:
        notebooks = _mechanism_notebooks(Path(scratch.name))
    else:
        notebooks = [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    print(f"{'notebook':34} runs passed hung failed  median_s  max_s   (load: {args.load} busy processes)")
    try:
        with busy_loops(args.load), tempfile.TemporaryDirectory() as out_dir:
            for nb in notebooks:
                results = [_run_once(nb, out_dir, args.limit) for _ in range(args.runs)]
                times = [t for o, t in results if o == "passed"] or [float("nan")]
                count = {k: sum(o == k for o, _ in results) for k in ("passed", "hung", "failed")}
                print(
                    f"{nb.name:34} {args.runs:4} {count['passed']:6} {count['hung']:4} {count['failed']:6}"
                    f"  {statistics.median(times):8.1f}  {max(times):5.1f}",
                    flush=True,
                )
    finally:
        scratch.cleanup()


if __name__ == "__main__":
    main()

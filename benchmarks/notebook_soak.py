"""Execute notebooks many times in a row and count the runs that hang or fail.

Run: python benchmarks/notebook_soak.py [--runs 20] [--load 2] [--limit 120] [notebooks ...]

Each run is a plain ``jupyter nbconvert --to notebook --execute`` in its own process group; a run
that has not finished after ``--limit`` seconds counts as a hang and its whole group (nbconvert and
its kernel) is killed, so no kernel is left behind. ``--load K`` keeps K busy-loop processes
running beside the notebooks (CPU starvation is what made widget notebooks hang: see
``rubrictools.widgets.adjudication``). Without notebook arguments every ``notebooks/*.ipynb`` runs.

Prints one line per notebook: runs, passed, hung, failed, median and max seconds.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--load", type=int, default=0, help="busy-loop processes beside the runs")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds before a run counts as hung")
    args = parser.parse_args()
    notebooks = [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    loaders = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(args.load)
    ]
    print(f"{'notebook':34} runs passed hung failed  median_s  max_s   (load: {args.load} busy processes)")
    try:
        with tempfile.TemporaryDirectory() as out_dir:
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
        for p in loaders:
            p.kill()


if __name__ == "__main__":
    main()

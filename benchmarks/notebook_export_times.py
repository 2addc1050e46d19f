"""Seconds each notebook takes to export with README's command (execute, then HTML).

Run: python benchmarks/notebook_export_times.py [--load 2] [notebooks ...]

Each notebook runs through exactly the README's main-job command (``jupyter nbconvert
--config notebooks/offline_export.json --to html --execute ... --ExecutePreprocessor.timeout=600``)
from the repository root, one after another; ``--load K`` keeps K busy-loop processes
running beside them (a loaded CI machine). Prints one line per notebook: outcome and seconds.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from notebook_soak import busy_loops  # a sibling script: benchmarks/ is on sys.path when this runs

ROOT = Path(__file__).resolve().parents[1]


def export(notebook: Path, out_dir: str) -> tuple[str, float]:
    cmd = [
        sys.executable, "-m", "jupyter", "nbconvert", "--config", "notebooks/offline_export.json", "--to", "html",
        "--execute", str(notebook), "--output-dir", out_dir, "--ExecutePreprocessor.timeout=600",
    ]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        print(done.stderr[-2000:], file=sys.stderr)
    return ("ok" if done.returncode == 0 else "failed"), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--load", type=int, default=0, help="busy-loop processes beside the exports")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args()
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    print(f"{'notebook':40} outcome  seconds   (load: {args.load} busy processes)")
    with busy_loops(args.load), tempfile.TemporaryDirectory() as out:
        for nb in notebooks:
            outcome, secs = export(nb.resolve(), out)
            print(f"{nb.name:40} {outcome:8} {secs:7.1f}", flush=True)


if __name__ == "__main__":
    main()

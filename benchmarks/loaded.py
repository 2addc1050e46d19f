"""Run a benchmark beside busy loops: the same figures on a loaded machine.

    python benchmarks/loaded.py 2 benchmarks/grading_throughput.py --runs 3

starts ``k`` busy-loop processes (one core each), runs the benchmark script with its own
arguments, and stops the loops when it ends.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from notebook_soak import busy_loops


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    k, script, rest = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    print(f"beside {k} busy loops: {script} {' '.join(rest)}", flush=True)
    with busy_loops(k):
        code = subprocess.run([sys.executable, script, *rest], check=False).returncode
    raise SystemExit(code)


if __name__ == "__main__":
    main()

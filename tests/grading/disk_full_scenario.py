"""Run by tests/grading/test_disk_full.py inside a private mount namespace whose ``root`` is a
2 MiB tmpfs: stream 250 calls to parquet with the cache on that disk, filled by ``filler``
bytes; then free the space and resume in a new process. Prints a JSON summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

CHILD = "grade"


def grade(root: str, url: str) -> dict:
    import polars as pl

    import rubrictools as rt

    rubric = rt.Rubric([rt.Criterion(name=f"c{i}", requirement=f"requirement {i}") for i in range(5)])
    df = pl.DataFrame({"qid": [f"q{i}" for i in range(50)], "text": [f"word {i} " * 2000 for i in range(50)]})
    judge = rt.Judge(model="openai/fake", api_base=url, api_key="sk-fake", backoff_base=0.01)
    out: dict = {"warnings": [], "error": None}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            lf = rt.grade_to_parquet(
                df, rubric, column="text", id_column="qid", output=f"{root}/out", cache=f"{root}/c.sqlite",
                model=judge, batch_size=10, progress=False,
            )  # fmt: skip
            v = lf.collect()
            out["rows"], out["answered"] = v.height, v["error"].null_count()
        except OSError as e:
            out["error"] = {"type": type(e).__name__, "errno": e.errno, "message": str(e)}
            out["part_rows"] = getattr(e, "verdicts", None) is not None and e.verdicts.height
    out["warnings"] = [str(w.message) for w in caught]
    return out


def main(root: str, filler: int) -> None:
    from rubrictools.testing import FakeLLMServer

    with open(f"{root}/filler", "wb") as f:
        f.write(b"\0" * filler)
    runs = []
    with FakeLLMServer() as srv:
        for _ in range(2):
            before = srv.hits
            got = subprocess.run([sys.executable, __file__, CHILD, root, srv.url], capture_output=True, text=True)
            if got.returncode:
                raise SystemExit(got.stderr)
            runs.append({**json.loads(got.stdout), "calls": srv.hits - before})
            os.remove(f"{root}/filler") if os.path.exists(f"{root}/filler") else None
    print(json.dumps(runs))


if __name__ == "__main__":
    if sys.argv[1] == CHILD:
        print(json.dumps(grade(sys.argv[2], sys.argv[3])))
    else:
        main(sys.argv[1], int(sys.argv[2]))

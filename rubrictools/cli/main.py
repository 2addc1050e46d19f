"""The rubrictools command: grade, score, agree, runs and compare over table files.

Tables are read and written by extension (``.parquet``, ``.csv``, ``.jsonl``/``.ndjson``,
``.json``); rubrics are YAML or JSON files. Progress and summaries go to stderr, tables to
stdout (or ``-o FILE``). Exit codes: 0 success; 1 a gate failed (``--at-least``) or a run
left error rows (``grade`` without ``--allow-errors``); 2 bad arguments or inputs, reported
before any call is made.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import polars as pl
from pydantic import ValidationError

from rubrictools.comparison import assert_score, compare_runs
from rubrictools.grading import grade
from rubrictools.human_agreement import agreement
from rubrictools.judge import Judge
from rubrictools.records import load_run, runs
from rubrictools.rubric import Rubric
from rubrictools.rubric.scoring import score

__all__ = ["main", "parser", "read_table", "write_table"]

EXAMPLES = """examples:
  rubrictools grade answers.parquet --rubric rubric.yaml --model openai/gpt-4.1-mini -o verdicts.parquet
  rubrictools grade answers.csv --rubric rubric.json --model openai/qwen --api-base http://127.0.0.1:8000/v1 \\
      --column response --id-column qid -o verdicts.parquet
  rubrictools score verdicts.parquet --rubric rubric.yaml --at-least 0.8      # exit 1 below the bar
  rubrictools agree verdicts.parquet human.csv --rubric rubric.yaml --n-resamples 1000
  rubrictools runs
  rubrictools compare 20261125T101500-1a2b3c last --flips flips.csv

API keys come from the provider's environment variable (OPENAI_API_KEY, ...) or the variable
named by --api-key-env; never from the command line, where shells and process lists keep it.
"""

_READERS: dict[str, Callable[[Path], pl.DataFrame]] = {
    ".parquet": pl.read_parquet,
    ".csv": pl.read_csv,
    ".jsonl": pl.read_ndjson,
    ".ndjson": pl.read_ndjson,
}


class UsageError(ValueError):
    """Bad arguments or inputs: exit code 2."""


def read_table(path: str | Path) -> pl.DataFrame:
    """A table file by extension (parquet, csv, jsonl/ndjson, json records)."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{p}: no such file")
    suffix = p.suffix.lower()
    if suffix == ".json":
        return pl.read_json(p)
    if suffix not in _READERS:
        raise UsageError(f"{p}: unknown table format {suffix!r} (use {', '.join(_WRITABLE)})")
    return _READERS[suffix](p)


_WRITABLE = (".parquet", ".csv", ".jsonl", ".ndjson", ".json")


def check_output(path: str | Path | None) -> None:
    """Refuse an output the table could not be written to, before any call is paid for: an
    unknown format, or a folder that does not exist."""
    if path is None:
        return
    p = Path(path)
    if p.suffix.lower() not in _WRITABLE:
        raise UsageError(f"{p}: unknown table format {p.suffix.lower()!r} (use {', '.join(_WRITABLE)})")
    if p.parent.exists() and not p.parent.is_dir():
        raise UsageError(f"{p}: {str(p.parent)!r} is a file, not a folder")
    if not p.parent.is_dir():
        raise UsageError(f"{p}: the folder {str(p.parent)!r} does not exist")
    if p.is_dir():
        raise UsageError(f"{p}: is a folder; give a file name")


def write_table(df: pl.DataFrame, path: str | Path | None) -> None:
    """Write ``df`` by extension, or print it to stdout when ``path`` is None. Nested columns
    (lists, structs) are written as JSON text to CSV."""
    if path is None:
        with pl.Config(
            tbl_rows=50,
            tbl_cols=-1,
            fmt_str_lengths=60,
            tbl_width_chars=240,
            tbl_hide_dataframe_shape=True,
            tbl_hide_column_data_types=True,
        ):
            print(df)
        return
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        df.write_parquet(p)
    elif suffix == ".csv":
        nested = [c for c, t in df.schema.items() if t.is_nested()]
        df.with_columns([pl.col(c).map_elements(_json, return_dtype=pl.String) for c in nested]).write_csv(p)
    elif suffix in (".jsonl", ".ndjson"):
        df.write_ndjson(p)
    elif suffix == ".json":
        df.write_json(p)
    else:
        raise UsageError(f"{p}: unknown table format {suffix!r} (use {', '.join(_WRITABLE)})")


def _json(value: Any) -> str:
    import json

    return json.dumps(value.to_list() if isinstance(value, pl.Series) else value, default=str)


def _rubric(path: str | None) -> Rubric | None:
    if path is None:
        return None
    if not Path(path).exists():
        raise UsageError(f"--rubric {path}: no such file")
    return Rubric.from_file(path)


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def _check_flags(a: argparse.Namespace) -> None:
    """Flags that would fail only after the calls were paid for, refused first."""
    base = getattr(a, "api_base", None)
    if base is not None and urlparse(base).scheme not in ("http", "https"):
        raise UsageError(f"--api-base {base!r}: give the server's URL, e.g. http://127.0.0.1:8000/v1")
    record = getattr(a, "record", None)
    if record is not None and Path(record).exists() and not Path(record).is_dir():
        raise UsageError(f"--record {record}: is a file; give the run store's folder")
    for flag in ("seed",):
        value = getattr(a, flag, None)
        if value is not None and value < 0:
            raise UsageError(f"--{flag} {value}: must be >= 0")


def _judge(a: argparse.Namespace, key: str | None) -> Any:
    """The judge the flags describe: the model name alone, or a Judge with the settings given."""
    if a.model == "rubrictools/scripted":
        return a.model
    given = {"api_base": a.api_base, "api_key": key, "temperature": a.temperature, "timeout": a.timeout}
    given["max_concurrency"] = a.max_concurrency
    settings = {k: v for k, v in given.items() if v is not None}
    try:
        return Judge(model=a.model, **settings)
    except ValidationError as e:
        err = e.errors()[0]
        raise UsageError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}") from None


def _grade(a: argparse.Namespace) -> int:
    df = read_table(a.input)
    key = None
    if a.api_key_env is not None:
        key = os.environ.get(a.api_key_env)
        if not key:
            raise UsageError(f"--api-key-env {a.api_key_env}: the variable is not set")
    cache: Any = False if a.no_cache else (a.cache or True)
    record: Any = False if a.no_record else (a.record or True)
    v = grade(
        df,
        _rubric(a.rubric),
        model=_judge(a, key),
        column=a.column,
        id_column=a.id_column,
        query_column=a.query_column,
        reference_column=a.reference_column,
        mode=a.mode,
        examples=read_table(a.examples) if a.examples else None,
        criterion_context=a.criterion_context,
        confidence=a.confidence,
        max_cost_usd=a.max_cost_usd,
        cache=cache,
        record=record,
        progress=not a.quiet,
    )
    write_table(v, a.output)
    judged = v.filter(pl.col("judge") != "ensemble")
    errors = int(judged["error"].is_not_null().sum())
    cost = judged["cost_usd"].sum()
    _say(
        f"{v.height} verdict rows, {errors} error rows, ${cost:.4f}" + (f"; written to {a.output}" if a.output else "")
    )
    if errors and not a.allow_errors:
        _say("error rows: re-run the same command to retry them (answers already given come from the cache)")
        return 1
    return 0


def _score(a: argparse.Namespace) -> int:
    v = read_table(a.verdicts)
    rub = _rubric(a.rubric)
    write_table(score(v, rub), a.output)
    if a.at_least is None:
        return 0
    try:
        gates = assert_score(v, rub, at_least=a.at_least, ci=a.confidence, on_error=a.errors)
    except AssertionError as e:
        _say(str(e))
        return 1
    g = gates.row(0, named=True)
    _say(f"gate passed: mean {g['mean']:.4f}, {a.confidence:.0%} lower bound {g['lower_bound']:.4f} >= {a.at_least}")
    return 0


def _agree(a: argparse.Namespace) -> int:
    v, h = read_table(a.verdicts), read_table(a.human)
    metrics = a.metrics.split(",") if a.metrics else None
    t = agreement(v, h, _rubric(a.rubric), metrics=metrics, n_resamples=a.n_resamples, seed=a.seed)
    write_table(t, a.output)
    return 0


def _runs(a: argparse.Namespace) -> int:
    t = runs(a.root)
    if a.output is None:  # what fits a terminal; -o writes every column
        t = t.select(
            "id",
            pl.col("created").dt.strftime("%Y-%m-%d %H:%M"),
            "kind",
            pl.col("judges").list.join(", "),
            "mode",
            "submissions",
            "errors",
            pl.col("cost_usd").round(4),
        )
    write_table(t, a.output)
    if t.height == 0:
        _say(f"no recorded run under {a.root or 'the default store'}")
    return 0


def _compare(a: argparse.Namespace) -> int:
    def side(x: str) -> Any:
        return read_table(x) if Path(x).suffix.lower() in (*_READERS, ".json") else load_run(x, root=a.root)

    cmp = compare_runs(
        side(a.a),
        side(a.b),
        rubric=_rubric(a.rubric),
        names=(a.name_a, a.name_b),
        n_resamples=a.n_resamples,
        seed=a.seed,
    )
    write_table(cmp.summary, a.output)
    with pl.Config(tbl_rows=20, fmt_str_lengths=40):
        _say(str(cmp.costs))
    _say(repr(cmp))
    if a.flips:
        write_table(cmp.flips, a.flips)
    return 0


def _grade_parser(sub: Any) -> None:
    g = sub.add_parser("grade", help="grade a table of submissions", epilog=EXAMPLES, formatter_class=_Fmt)
    g.add_argument("input", help="submissions table (.parquet, .csv, .jsonl, .json)")
    g.add_argument("--rubric", required=True, help="rubric file (.yaml or .json)")
    g.add_argument("--model", required=True, help="litellm model, e.g. openai/gpt-4.1-mini, or rubrictools/scripted")
    g.add_argument("--column", default="submission", help="submission column")
    g.add_argument("--id-column", help="id column (default: row number)")
    g.add_argument("--query-column", help="prompt column shown to the judge")
    g.add_argument("--reference-column", help="reference answer column shown to the judge")
    g.add_argument("--mode", default="per_criterion", choices=["per_criterion", "per_item", "grouped", "holistic"])
    g.add_argument("--examples", help="few-shot examples (submission, criterion, verdict[, explanation]; or score)")
    g.add_argument(
        "--criterion-context", default="focused", choices=["focused", "full"], help="full: show the rest of the rubric"
    )
    g.add_argument("--confidence", action="store_true", help="ask for a 0-1 confidence per verdict")
    g.add_argument("--api-base", help="OpenAI-compatible server URL (vLLM, llama.cpp, Ollama)")
    g.add_argument("--api-key-env", help="environment variable holding the API key")
    g.add_argument("--temperature", type=float)
    g.add_argument("--timeout", type=float, help="seconds per request")
    g.add_argument("--max-concurrency", type=int)
    g.add_argument("--max-cost-usd", type=float, help="stop making calls past this spend")
    g.add_argument("--cache", help="response cache file (default: the user cache)")
    g.add_argument("--no-cache", action="store_true")
    g.add_argument("--record", help="run store folder (default: $RUBRICTOOLS_RUNS or ./rubrictools-runs)")
    g.add_argument("--no-record", action="store_true")
    g.add_argument("--allow-errors", action="store_true", help="exit 0 even with error rows")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.add_argument("-o", "--output", help="verdict table file (default: print)")
    g.set_defaults(run=_grade)


class _Fmt(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    pass


def parser() -> argparse.ArgumentParser:
    """The command-line parser (``rubrictools --help``)."""
    p = argparse.ArgumentParser(
        prog="rubrictools", description=(__doc__ or "").split("\n\n")[0], epilog=EXAMPLES, formatter_class=_Fmt
    )
    sub = p.add_subparsers(dest="command", required=True)
    _grade_parser(sub)
    s = sub.add_parser(
        "score", help="score a verdict table; gate with --at-least", epilog=EXAMPLES, formatter_class=_Fmt
    )
    s.add_argument("verdicts")
    s.add_argument("--rubric", help="rubric file (default: the table's weight column)")
    s.add_argument("--at-least", type=float, help="fail (exit 1) unless the score's lower bound reaches this")
    s.add_argument("--confidence", type=float, default=0.95)
    s.add_argument("--errors", default="fail", choices=["fail", "zero", "exclude"], help="failed calls in the gate")
    s.add_argument("-o", "--output")
    s.set_defaults(run=_score)
    g = sub.add_parser("agree", help="agreement with human labels", epilog=EXAMPLES, formatter_class=_Fmt)
    g.add_argument("verdicts")
    g.add_argument("human", help="human labels: id, criterion, label[, rater]")
    g.add_argument("--rubric")
    g.add_argument("--metrics", help="comma-separated metric names (default: the standard set)")
    g.add_argument(
        "--n-resamples",
        "--bootstrap",
        dest="n_resamples",
        type=int,
        default=1000,
        help="bootstrap resamples (--bootstrap: old name)",
    )
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("-o", "--output")
    g.set_defaults(run=_agree)
    r = sub.add_parser("runs", help="list recorded runs", epilog=EXAMPLES, formatter_class=_Fmt)
    r.add_argument("--root", help="run store (default: $RUBRICTOOLS_RUNS or ./rubrictools-runs)")
    r.add_argument("-o", "--output")
    r.set_defaults(run=_runs)
    c = sub.add_parser("compare", help="compare two runs (ids, 'last' or verdict files)", epilog=EXAMPLES,
                       formatter_class=_Fmt)  # fmt: skip
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--root")
    c.add_argument("--rubric", help="rubric for verdict files (recorded runs carry their own)")
    c.add_argument("--name-a", default="a")
    c.add_argument("--name-b", default="b")
    c.add_argument(
        "--n-resamples",
        "--bootstrap",
        dest="n_resamples",
        type=int,
        default=2000,
        help="bootstrap resamples (--bootstrap: old name)",
    )
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--flips", help="write the changed verdicts to this file")
    c.add_argument("-o", "--output", help="summary table file (default: print)")
    c.set_defaults(run=_compare)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = parser().parse_args(argv)
    try:
        for flag in ("output", "flips"):  # every table a command writes: checked before any work or call
            check_output(getattr(args, flag, None))
        _check_flags(args)
        code: int = args.run(args)
    except (UsageError, ValueError, TypeError, LookupError, OSError, pl.exceptions.PolarsError) as e:
        _say(f"rubrictools {args.command}: {e}")
        return 2
    return code

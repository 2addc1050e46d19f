"""Reading Inspect AI logs: files, folders, ``EvalLogInfo`` handles or ``EvalLog`` objects, one log at a time.

Inspect's own :func:`inspect_ai.log.read_eval_log` reads each (``.eval`` and ``.json`` alike); a
folder is listed with :func:`inspect_ai.log.list_eval_logs`. A file that is not an Inspect log,
and a log without samples (an unfinished run, one read ``header_only``), are said so.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rubrictools.inspect.requires import inspect_log_module
from rubrictools.stack import user_stacklevel

__all__ = ["each_log", "sample_usage", "sample_where", "text_of"]


def _read(mod: Any, where: Any) -> Any:
    try:
        return mod.read_eval_log(where)
    except Exception as e:  # pydantic, JSON and zip errors alike: the file is not a readable log
        name = getattr(where, "name", where)
        raise ValueError(f"logs: {str(name)!r} is not a readable Inspect log ({type(e).__name__}: {e})"[:400]) from e


def _one(mod: Any, item: Any) -> Iterator[Any]:
    if hasattr(item, "eval") and hasattr(item, "samples"):
        yield item
    elif type(item).__name__ == "EvalLogInfo" or (isinstance(item, str) and "://" in item):
        yield _read(mod, item)  # what list_eval_logs() returns; a remote log (s3://...) Inspect reads where it is
    elif isinstance(item, (str, Path)):
        p = Path(item)
        if p.is_dir():
            found = mod.list_eval_logs(str(p), recursive=True)
            if not found:
                raise FileNotFoundError(f"logs: no .eval or .json Inspect log under {str(p)!r}")
            yield from (_read(mod, info) for info in reversed(found))
        elif p.is_file():
            yield _read(mod, str(p))
        else:
            raise FileNotFoundError(f"logs: {str(p)!r} is not a file or a folder")
    else:
        raise TypeError(f"logs: expected a path, a folder or an inspect_ai EvalLog, got {type(item).__name__}")


def each_log(logs: Any, what: str) -> Iterator[Any]:
    """Each log of ``logs`` (a path, a folder, an ``EvalLogInfo``, an ``EvalLog``, or a list of them),
    read; a warning names the logs that hold no samples."""
    mod = inspect_log_module(what)
    # a list, a set or an iterator of logs; not one EvalLogInfo (a pydantic model iterates over its fields)
    several = isinstance(logs, (list, tuple, set, frozenset, Iterator))
    items = list(logs) if several else [logs]
    if not items:
        raise ValueError("logs: an empty list; give a log file, a folder of logs or EvalLog objects")
    seen: set[tuple[str, str]] = set()
    for item in items:
        for log in _one(mod, item):
            run = (str(log.eval.eval_id), str(log.eval.run_id))
            if run in seen:  # the same log twice (a path given twice, a .json copy of an .eval)
                warnings.warn(
                    f"logs: the run of {log.eval.task!r} on {log.eval.model!r} (eval id {run[0]}) is given twice; "
                    "read once",
                    UserWarning,
                    stacklevel=user_stacklevel(),
                )
                continue
            seen.add(run)
            if not log.samples:
                where = Path(str(log.location)).name if log.location else log.eval.task
                warnings.warn(
                    f"log {where!r} (status {log.status}) holds no samples: an unfinished run, or a log read with "
                    "header_only=True; nothing is read from it",
                    UserWarning,
                    stacklevel=user_stacklevel(),
                )
            yield log


def text_of(value: Any) -> str | None:
    """An input or target as text: a string as is, a list of strings or messages joined."""
    if value is None or isinstance(value, str):
        return value
    return "\n\n".join(v if isinstance(v, str) else str(getattr(v, "text", v)) for v in value)


def sample_usage(sample: Any) -> dict[str, Any]:
    """Tokens and cost over every model the sample used (None where Inspect recorded none)."""
    usage = list((sample.model_usage or {}).values())
    if not usage:
        return {"input_tokens": None, "output_tokens": None, "total_tokens": None, "cost_usd": None}
    costs = [u.total_cost for u in usage if u.total_cost is not None]
    return {
        "input_tokens": sum(u.input_tokens for u in usage),
        "output_tokens": sum(u.output_tokens for u in usage),
        "total_tokens": sum(u.total_tokens for u in usage),
        "cost_usd": sum(costs) if costs else None,
    }


def sample_where(log: Any, sample: Any) -> dict[str, Any]:
    return {
        "log": Path(str(log.location)).name if log.location else None,
        "task": log.eval.task,
        "run_id": log.eval.run_id,
        "status": log.status,
        "system": log.eval.model,
        "id": str(sample.id),
        "epoch": sample.epoch,
    }

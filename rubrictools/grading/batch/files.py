"""The job directory: its file names, formats and atomic writes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rubrictools.judge.batch_api import read_lines

__all__ = [
    "ENDPOINT",
    "FORMAT",
    "GROUP",
    "HANDLE",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "TERMINAL",
    "submitted_ids",
    "write_json",
]

HANDLE = "handle.json"
GROUP = "slices.json"
FORMAT = "rubrictools-batch/1"
ENDPOINT = "/v1/chat/completions"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
MAX_REQUESTS = 50_000  # OpenAI's limit per batch
MAX_BYTES = 190 * 1024 * 1024  # OpenAI's limit is 200 MB per input file


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)  # the handle is always either the old or the new version


def submitted_ids(path: Path) -> list[str]:
    return [line["custom_id"] for line in read_lines(path) if "custom_id" in line]

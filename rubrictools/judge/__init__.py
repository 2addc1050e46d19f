"""Everything about asking a judge, and the only code that talks HTTP.

- :class:`Judge` (how one judge is reached) and :class:`ScriptedJudge` (an offline stand-in);
- :mod:`~rubrictools.judge.tasks`: one class per judge mode (messages, schema, parse, rows);
- :mod:`~rubrictools.judge.prompts` and :mod:`~rubrictools.judge.parsing`;
- :mod:`~rubrictools.judge.transport` (litellm or direct), :mod:`~rubrictools.judge.retry`,
  :mod:`~rubrictools.judge.pricing`, :mod:`~rubrictools.judge.cache`,
  :mod:`~rubrictools.judge.batch_api` (provider batch files).
"""

from __future__ import annotations

from rubrictools.judge.cache import (
    CachedResponse,
    CacheWriteError,
    RequestKeys,
    ResponseCache,
    cache_key,
    default_cache_path,
)
from rubrictools.judge.call import NO_DISTRIBUTION, Call, apply_answer
from rubrictools.judge.config import Judge
from rubrictools.judge.custom import FunctionJudge, Grader
from rubrictools.judge.result import ERROR_KINDS, CallResult
from rubrictools.judge.role import Role
from rubrictools.judge.rows import ROW_COLUMNS, RowSink
from rubrictools.judge.scripted import ScriptedJudge
from rubrictools.judge.tasks import (
    CriterionTask,
    HolisticTask,
    ItemTask,
    JudgeTask,
    PairTask,
    Parsed,
    PromptParts,
    Subject,
)

__all__ = [
    "ERROR_KINDS",
    "NO_DISTRIBUTION",
    "ROW_COLUMNS",
    "CacheWriteError",
    "CachedResponse",
    "Call",
    "CallResult",
    "CriterionTask",
    "FunctionJudge",
    "Grader",
    "HolisticTask",
    "ItemTask",
    "Judge",
    "JudgeTask",
    "PairTask",
    "Parsed",
    "PromptParts",
    "RequestKeys",
    "ResponseCache",
    "Role",
    "RowSink",
    "ScriptedJudge",
    "Subject",
    "apply_answer",
    "cache_key",
    "default_cache_path",
]

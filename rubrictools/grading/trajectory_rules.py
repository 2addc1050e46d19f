"""Trajectory checks of a rule: which tools an agent called, in which order, with what, and
whether its final answer uses what a tool returned. No judge, no call.

A conversation's tool calls and results come from :func:`rubrictools.conversations.tool_steps`.
The checks of one :class:`~rubrictools.rubric.Rule` all hold for MET:

* ``tool_called``: a call of that tool (with ``tool_arguments``: whose JSON arguments include
  the pattern: every key of a mapping present with a matching value, recursively; any other
  pattern equals the arguments);
* ``tool_not_called``: no call of that tool;
* ``called_before=(a, b)``: both called, the first call of ``a`` before the first of ``b``;
* ``max_tool_calls``: at most that many calls (of ``tool_called`` when given, else of any tool);
* ``answer_uses_tool_result``: the final assistant turn states a value a tool returned (of
  ``tool_called`` when given): a scalar of a JSON result, or a line (at most 200 characters)
  or a code or number (a word of 4+ characters with a digit) of a text result, matched
  case-insensitively as a whole word.

Submissions that are not conversations have no tool calls. Trajectories are nested, so these
checks run per submission in Python; the text checks stay polars expressions.

>>> import polars as pl, rubrictools as rt
>>> call = {"id": "1", "name": "weather", "arguments": '{"city": "Oslo"}'}
>>> chat = [{"role": "user", "content": "Weather in Oslo?"},
...         {"role": "assistant", "content": None, "tool_calls": [call]},
...         {"role": "tool", "tool_call_id": "1", "content": '{"temp_c": -3}'},
...         {"role": "assistant", "content": "It is -3 degrees in Oslo."}]
>>> rubric = rt.Rubric.from_dict([
...     {"name": "looked_up", "rule": {"tool_called": "weather", "tool_arguments": {"city": "Oslo"}}},
...     {"name": "grounded", "rule": {"answer_uses_tool_result": True}}])
>>> rt.apply_rules(pl.DataFrame({"submission": [chat]}), rubric).select("criterion", "verdict").rows()
[('looked_up', 'MET'), ('grounded', 'MET')]
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Sequence
from typing import Any

import polars as pl

from rubrictools.conversations import ToolStep, tool_steps
from rubrictools.rubric import Rule
from rubrictools.stack import user_stacklevel
from rubrictools.submissions import Submission

__all__ = ["trajectory_verdicts"]

_LINE = 200


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: ``1 call``, ``2 calls``, ``0 times``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _includes(value: Any, pattern: Any) -> bool:
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and _includes(value[k], p) for k, p in pattern.items())
    if isinstance(pattern, bool) or isinstance(value, bool):
        return value is pattern
    if isinstance(pattern, (int, float)) and isinstance(value, (int, float)):
        return float(value) == float(pattern)
    return bool(value == pattern)


def _scalars(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        return [s for v in doc.values() for s in _scalars(v)]
    if isinstance(doc, list):
        return [s for v in doc for s in _scalars(v)]
    if isinstance(doc, bool) or doc is None:
        return []
    if isinstance(doc, float) and doc.is_integer():
        return [str(int(doc))]
    return [str(doc).strip()]


def _values(result: str) -> list[str]:
    """What a tool returned, as strings an answer could state: a JSON result's scalars; a text
    result's lines, and its codes and numbers (words of 4 or more characters with a digit)."""
    try:
        found = _scalars(json.loads(result))
    except (TypeError, ValueError):
        found = [line.strip() for line in result.splitlines()]
        found += [w.strip(".,;:()[]\"'") for w in result.split() if len(w) >= 4 and any(ch.isdigit() for ch in w)]
    return [v for v in found if v and len(v) <= _LINE]


def _stated(value: str, answer: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", answer, re.IGNORECASE) is not None


def _final_answer(sub: Submission) -> str:
    turns = sub.turns or ()
    last = next((t for t in reversed(turns) if t.role == "assistant" and t.text), None)
    return last.text if last is not None else ("" if sub.turns is not None else sub.output)


def _check(sub: Submission, rule: Rule) -> tuple[bool, str]:
    steps = tool_steps(sub.turns) if sub.turns is not None else ()
    names = [s.call.name for s in steps]
    oks: list[bool] = []
    whys: list[str] = []

    def note(ok: bool, why: str) -> None:
        oks.append(ok)
        whys.append(why)

    mine: Sequence[ToolStep] = steps
    if rule.tool_called is not None:
        mine = [s for s in steps if s.call.name == rule.tool_called]
        want = rule.tool_arguments
        fit = [s for s in mine if want is None or _includes(s.call.parsed_arguments(), want)]
        unread = [s.call.arguments for s in mine if want is not None and not s.call.arguments_are_json()]
        if fit:
            note(True, f"called {rule.tool_called!r} (call {steps.index(fit[0]) + 1} of {len(steps)})")
        elif mine:
            why = f"called {rule.tool_called!r} {_count(len(mine), 'time')}, never with arguments including {want}"
            if unread:
                had = f"{_count(len(unread), 'call')} had arguments that are not JSON"
                why += f" ({had}, e.g. {unread[0][:60]!r})"
            note(False, why)
        else:
            note(False, f"never called {rule.tool_called!r} (calls: {', '.join(names) or 'none'})")
    if rule.tool_not_called is not None:
        n = names.count(rule.tool_not_called)
        note(
            n == 0,
            f"called {rule.tool_not_called!r} {_count(n, 'time')}" if n else f"never called {rule.tool_not_called!r}",
        )
    if rule.called_before is not None:
        a, b = rule.called_before
        ia, ib = (names.index(x) if x in names else None for x in (a, b))
        ok = ia is not None and ib is not None and ia < ib
        first = [f"{t!r} never called" if i is None else f"{t!r} first at call {i + 1}" for t, i in ((a, ia), (b, ib))]
        note(ok, ", ".join(first))
    if rule.max_tool_calls is not None:
        of = repr(rule.tool_called) if rule.tool_called is not None else "tools"
        note(len(mine) <= rule.max_tool_calls, f"{_count(len(mine), 'call')} of {of} (at most {rule.max_tool_calls})")
    if rule.answer_uses_tool_result:
        answer = _final_answer(sub)
        hit = next(
            ((s, v) for s in mine if s.result is not None for v in _values(s.result) if _stated(v, answer)), None
        )
        if hit is None:
            note(False, "the final answer states no value a tool returned")
        else:
            note(True, f"the final answer states {hit[1]!r}, returned by {hit[0].call.name!r}")
    return all(oks), "; ".join(whys)


def _unreadable_arguments(subs: Sequence[Submission], rule: Rule) -> int:
    """Calls of the rule's tool whose arguments are not JSON (``tool_arguments`` cannot match them)."""
    if rule.tool_called is None or rule.tool_arguments is None:
        return 0
    steps = (s for sub in subs if sub.turns is not None for s in tool_steps(sub.turns))
    return sum(1 for s in steps if s.call.name == rule.tool_called and not s.call.arguments_are_json())


def _warn_unanswerable(subs: Sequence[Submission], rule: Rule, name: str) -> None:
    """Say why every verdict of a trajectory rule would be UNMET when nothing can be checked."""
    if subs and all(sub.turns is None for sub in subs):
        warnings.warn(
            f"rule criterion {name!r} checks tool calls, but no submission is a conversation (a list of "
            "{role, content[, tool_calls]} messages): none has a tool call, so every verdict is UNMET",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    bad = _unreadable_arguments(subs, rule)
    if bad:
        warnings.warn(
            f"rule criterion {name!r}: {bad} call(s) of {rule.tool_called!r} have arguments that are not JSON, "
            "so tool_arguments cannot match them (their verdicts say so)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def trajectory_verdicts(subs: Sequence[Submission], rule: Rule, name: str = "") -> tuple[pl.Series, pl.Series]:
    """``MET``/``UNMET`` and an explanation per submission for the rule's trajectory checks
    (warning once when no submission can be checked, or when arguments cannot be read)."""
    _warn_unanswerable(subs, rule, name)
    checked = [_check(sub, rule) for sub in subs]
    verdict = pl.Series("verdict", ["MET" if ok else "UNMET" for ok, _ in checked], dtype=pl.String)
    return verdict, pl.Series("explanation", [why for _, why in checked], dtype=pl.String)

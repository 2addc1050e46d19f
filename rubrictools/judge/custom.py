"""Judges you write yourself: :class:`Grader` (a base class) and :class:`FunctionJudge`.

A custom judge receives what a model would: the rendered system prompt, the rendered user
prompt (untrusted text already escaped and fenced) and the JSON schema a valid reply follows.
It returns the reply (a JSON string, a mapping, or a pydantic model), and from there its answer
takes the same road as a model's: the mode's parser checks it, each criterion becomes a verdict
row, and a reply that does not parse, or an exception, becomes an explicit error row of that
call (``error_kind`` ``"parse"`` or ``"provider"``) instead of stopping the run.

A synchronous ``generate`` runs in worker threads (at most ``max_concurrency`` at a time); a
coroutine ``generate`` is awaited on the grading loop. Custom judges have no token accounting
and no retries of their own: do those inside ``generate`` when you need them.

Caching: a judge you wrote is asked again on every run unless you give it a ``cache_id``, a
stable name for what it does (say ``"my-gpt4o-wrapper-v1"``). Its answers are then kept in the
response cache under a key of the id and every byte of the request, so an interrupted or
repeated run asks only what was not answered; change the id when the judge changes.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel

from rubrictools.judge.config import check_weight
from rubrictools.judge.image_parts import content_text

__all__ = ["FunctionJudge", "Grader", "Reply"]

Reply = str | Mapping[str, Any] | BaseModel
"""What a custom judge returns: the reply's JSON text, or the object it encodes."""

Generate = Callable[..., Reply | Awaitable[Reply]]


def reply_text(reply: Any) -> str:
    """A custom judge's reply as the JSON text the parser reads."""
    if isinstance(reply, str):
        return reply
    if isinstance(reply, BaseModel):
        return reply.model_dump_json()
    if isinstance(reply, Mapping):
        return json.dumps(dict(reply), ensure_ascii=False)
    kind = type(reply).__name__
    raise TypeError(f"a judge's generate() must return a str, a mapping or a pydantic model, got {kind}")


class Grader(ABC):
    """Base class of a judge you write (autorubric's ``Grader``, ``rubric``'s ``Autograder``).

    Subclass it and implement :meth:`generate`; pass an instance as ``model=`` to
    :func:`rubrictools.grade` (alone, or beside LLM judges in an ensemble). Override
    :meth:`generate_messages` instead when you need the messages themselves (a conversation
    or image parts).

    Parameters
    ----------
    name
        The judge's label in the ``judge`` column.
    weight
        Its weight in a weighted ensemble vote.
    max_concurrency
        At most this many ``generate`` calls at once.
    cache_id
        A stable name for what the judge does: answers are cached under it (see the module
        docstring); ``None`` (default): never cached.

    Example
    -------
    >>> import json, polars as pl, rubrictools as rt
    >>> class Keyword(rt.Grader):
    ...     def generate(self, system_prompt, user_prompt, *, schema):
    ...         met = "refund" in user_prompt.split("<submission>")[1].split("</submission>")[0]
    ...         return {"verdict": "MET" if met else "UNMET", "explanation": "looked for 'refund'"}
    >>> rubric = rt.Rubric.from_dict([{"name": "refund", "requirement": "Offers a refund"}])
    >>> df = pl.DataFrame({"submission": ["We will refund you.", "No."]})
    >>> rt.grade(df, rubric, model=Keyword(name="kw"), progress=False, record=False)["verdict"].to_list()
    ['MET', 'UNMET']
    """

    is_scripted = False

    def __init__(
        self, *, name: str = "custom", weight: float = 1.0, max_concurrency: int = 8, cache_id: str | None = None
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if cache_id is not None and (not isinstance(cache_id, str) or not cache_id.strip()):
            raise ValueError(f"cache_id must be a non-empty string or None, got {cache_id!r}")
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ValueError(f"max_concurrency must be an integer >= 1, got {max_concurrency!r}")
        self.label = name
        self.model = name
        self.weight = check_weight(weight)
        self.max_concurrency = max_concurrency
        self.cache_id = cache_id

    def request_identity(self) -> dict[str, Any] | None:
        """What besides the messages makes this judge's answer (None: not cached)."""
        return None if self.cache_id is None else {"custom_judge": self.cache_id}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.label!r}, a judge you wrote)"

    @abstractmethod
    def generate(self, system_prompt: str, user_prompt: str, *, schema: dict[str, Any]) -> Reply | Awaitable[Reply]:
        """The reply to one judge question: ``system_prompt`` and ``user_prompt`` are rendered
        exactly as a model receives them; ``schema`` is the JSON schema of a valid reply."""

    def generate_messages(self, messages: list[dict[str, Any]], *, schema: dict[str, Any]) -> Reply | Awaitable[Reply]:
        """The reply to the chat ``messages`` (default: :meth:`generate` on the system and user
        texts; an image part appears in the text as ``[image: type, size, sha256]``)."""
        system = "\n\n".join(content_text(m["content"]) for m in messages if m["role"] == "system")
        user = "\n\n".join(content_text(m["content"]) for m in messages if m["role"] != "system")
        return self.generate(system, user, schema=schema)

    async def respond(self, messages: list[dict[str, Any]], schema: dict[str, Any]) -> str:
        """The reply's text: a synchronous judge runs in a worker thread, an asynchronous one
        is awaited."""
        if inspect.iscoroutinefunction(self.generate) or inspect.iscoroutinefunction(self.generate_messages):
            out = self.generate_messages(messages, schema=schema)
        else:
            out = await asyncio.to_thread(self.generate_messages, messages, schema=schema)
        if inspect.isawaitable(out):
            out = await out
        return reply_text(out)


class FunctionJudge(Grader):
    """A :class:`Grader` from a function ``fn(system_prompt, user_prompt, *, schema) -> reply``
    (sync or async): rubric's ``generate_fn`` (``fn(system_prompt, user_prompt)``, without
    the schema, is taken too) and autorubric's custom graders.

    Parameters
    ----------
    fn
        The function that answers one judge call: ``fn(system_prompt, user_prompt, *,
        schema)`` (or ``fn(system_prompt, user_prompt)``), sync or async, returning the reply
        as JSON text or a dict.
    name
        The judge's label in the ``judge`` column (default: the function's name).
    weight
        Its weight in a weighted ensemble vote (default 1).
    max_concurrency
        At most this many calls of ``fn`` at once (default 8).
    cache_id
        A stable name for what ``fn`` does: answers are cached under it; ``None`` (default):
        never cached.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> def judge(system_prompt, user_prompt, *, schema):
    ...     return '{"verdict": "MET", "explanation": "always met"}'
    >>> rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "Anything"}])
    >>> v = rt.grade(pl.DataFrame({"submission": ["x"]}), rubric, model=rt.FunctionJudge(judge),
    ...              progress=False, record=False)
    >>> v["verdict"].item(), v["judge"].item()
    ('MET', 'judge')
    """

    def __init__(
        self,
        fn: Generate,
        *,
        name: str | None = None,
        weight: float = 1.0,
        max_concurrency: int = 8,
        cache_id: str | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        label = name or str(getattr(fn, "__name__", "custom"))
        super().__init__(name=label, weight=weight, max_concurrency=max_concurrency, cache_id=cache_id)
        self.fn = fn
        self._schema = _takes_schema(fn)
        if inspect.iscoroutinefunction(fn):
            self.generate = self._agenerate  # type: ignore[method-assign]  # so respond() awaits it on the loop

    def generate(self, system_prompt: str, user_prompt: str, *, schema: dict[str, Any]) -> Reply | Awaitable[Reply]:
        return self._call(system_prompt, user_prompt, schema)

    def _call(self, system_prompt: str, user_prompt: str, schema: dict[str, Any]) -> Any:
        if self._schema:
            return self.fn(system_prompt, user_prompt, schema=schema)
        return self.fn(system_prompt, user_prompt)

    async def _agenerate(self, system_prompt: str, user_prompt: str, *, schema: dict[str, Any]) -> Reply:
        out = self._call(system_prompt, user_prompt, schema)
        return await out if inspect.isawaitable(out) else out


def _takes_schema(fn: Any) -> bool:
    """Whether ``fn`` is called with ``schema=`` (ours) or as ``fn(system_prompt, user_prompt)``
    (the ``rubric`` package's ``generate_fn``); a function that takes neither is refused here,
    before any call, rather than failing on every one."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: call it our way
        return True
    params = sig.parameters.values()
    if "schema" in sig.parameters or any(p.kind is p.VAR_KEYWORD for p in params):
        return True
    try:
        sig.bind("system", "user")
    except TypeError:
        raise TypeError(
            f"fn{sig} must take (system_prompt, user_prompt[, *, schema]): rubrictools calls "
            "fn(system_prompt, user_prompt, schema=...) or, without a schema parameter, fn(system_prompt, user_prompt)"
        ) from None
    return False

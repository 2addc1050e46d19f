"""Structured-output dialects: how a reply's JSON schema reaches an OpenAI-compatible server.

Servers that all speak OpenAI's chat-completions API disagree on how a schema is sent:

============================  ===============================================================
dialect                       request fields
============================  ===============================================================
``json_schema``               ``response_format={"type": "json_schema", "json_schema": {...}}``
                              (OpenAI, vLLM, llama.cpp's C++ server, Ollama >= 0.5, LM Studio)
``json_object_schema``        ``response_format={"type": "json_object", "schema": {...}}``
                              (llama-cpp-python's server: its grammar holds the reply to the
                              schema; it ignores the ``json_schema`` form)
``guided``                    ``guided_json={...}`` (vLLM's own form)
``json_object``               ``response_format={"type": "json_object"}`` (JSON mode)
``prompt``                    nothing: the instructions alone describe the reply
============================  ===============================================================

A server that ignores the dialect it is sent answers unconstrained, and a small model then
invents labels. :func:`resolve` picks the dialect of one judge: the judge's explicit setting;
litellm's capability data where litellm knows the model; otherwise, for an OpenAI-compatible
``api_base``, one probe (:func:`probe`) per server and model, remembered for the process and in
a small JSON file beside the response cache.
"""

from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path
from typing import Any

from rubrictools.judge.config import Judge
from rubrictools.judge.model_table import bundled_entry, litellm_may_know
from rubrictools.judge.providers import chat_url, custom_endpoint, load_litellm, request_headers, wire_model
from rubrictools.judge.retry import scrub
from rubrictools.stack import user_stacklevel

__all__ = [
    "DIALECTS",
    "PROBE_VALUE",
    "STRING_LIMITS",
    "bound_numbers",
    "bound_strings",
    "format_fields",
    "probe",
    "resolve",
    "static_dialect",
]

DIALECTS = ("json_schema", "json_object_schema", "guided", "json_object", "prompt")
"""Every dialect, the probe order first (the last two need no probe)."""

PROBE_VALUE = "schema-honoured"
"""The only value the probe schema allows; a reply carrying it came from a constrained decoder."""

_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"probe": {"type": "string", "enum": [PROBE_VALUE]}},
    "required": ["probe"],
    "additionalProperties": False,
}
_PROBE_MESSAGES = [
    {"role": "system", "content": 'Reply with exactly this JSON object and nothing else: {"probe": "no"}'},
    {"role": "user", "content": 'Reply with {"probe": "no"}.'},
]
_MEMO: dict[str, str] = {}
_LOCK = threading.Lock()
_FILE = "structured_output.json"


STRING_LIMITS = {"evidence": 600, "quote": 600}
"""``maxLength`` of the free-text fields a grammar dialect bounds (by field name; others 300):
an explanation of one or two sentences, a quote of a passage."""


def bound_strings(schema: Any, limit: int = 300, *, field: str | None = None) -> Any:
    """``schema`` with a ``maxLength`` on every free string (no ``enum``, no bound yet).

    A grammar-constrained decoder (llama.cpp, vLLM's guided decoding) holds the reply to the
    schema's *shape*, but a small model can fill an unbounded string until the token cap cuts
    the JSON off; the bound makes the grammar close it. Only the grammar dialects get it:
    OpenAI's strict ``json_schema`` refuses ``maxLength``.

    >>> bound_strings({"type": "object", "properties": {"explanation": {"type": "string"}}})
    {'type': 'object', 'properties': {'explanation': {'type': 'string', 'maxLength': 300}}}
    """
    if isinstance(schema, list):
        return [bound_strings(s, limit) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k == "properties" and isinstance(v, dict):
            out[k] = {p: bound_strings(s, limit, field=p) for p, s in v.items()}
        else:
            out[k] = bound_strings(v, limit) if isinstance(v, (dict, list)) else v
    if out.get("type") == "string" and "enum" not in out and "maxLength" not in out:
        out["maxLength"] = STRING_LIMITS.get(field or "", limit)
    return out


MAX_INTEGER_POINTS = 1001
"""An integer scale with at most this many points is spelled out as an ``enum`` for a grammar."""


def bound_numbers(schema: Any) -> Any:
    """``schema`` with every bounded integer (``minimum`` and ``maximum``, at most
    :data:`MAX_INTEGER_POINTS` values) also given as an ``enum`` of its values.

    llama-cpp-python's schema-to-grammar conversion ignores ``minimum``/``maximum`` but
    enforces an ``enum``, so the holistic 0-100 score cannot come back as 0-10's "10" from a
    grammar that allows any integer.

    >>> bound_numbers({"type": "integer", "minimum": 1, "maximum": 3})
    {'type': 'integer', 'minimum': 1, 'maximum': 3, 'enum': [1, 2, 3]}
    """
    if isinstance(schema, list):
        return [bound_numbers(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: bound_numbers(v) if isinstance(v, (dict, list)) else v for k, v in schema.items()}
    lo, hi = out.get("minimum"), out.get("maximum")
    if out.get("type") != "integer" or "enum" in out or not (isinstance(lo, int) and isinstance(hi, int)):
        return out
    if 0 <= hi - lo < MAX_INTEGER_POINTS:
        out["enum"] = list(range(lo, hi + 1))
    return out


def format_fields(dialect: str, schema: dict[str, Any], name: str) -> dict[str, Any]:
    """The request-body fields that carry ``schema`` in ``dialect`` (empty for ``"prompt"``);
    the grammar dialects get :func:`bound_strings` and :func:`bound_numbers` of it.

    >>> format_fields("json_object_schema", {"type": "object"}, "verdict")
    {'response_format': {'type': 'json_object', 'schema': {'type': 'object'}}}
    >>> format_fields("guided", {"type": "object"}, "verdict")
    {'guided_json': {'type': 'object'}}
    """
    if dialect == "json_schema":
        return {
            "response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
        }
    if dialect == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": bound_numbers(bound_strings(schema))}}
    if dialect == "guided":
        return {"guided_json": bound_numbers(bound_strings(schema))}
    if dialect == "json_object":
        return {"response_format": {"type": "json_object"}}
    if dialect == "prompt":
        return {}
    raise ValueError(f"structured_output must be one of {', '.join(map(repr, ('auto', *DIALECTS)))}; got {dialect!r}")


def static_dialect(judge: Judge) -> str | None:
    """The judge's dialect without asking its server; ``None`` when only a probe can tell.

    An explicit ``structured_output`` (other than ``"auto"``) wins; then
    a model litellm knows (``json_schema`` when it supports response schemas, else JSON mode);
    a custom OpenAI-compatible ``api_base`` serving a model litellm does not know needs a probe.
    """
    if judge.structured_output != "auto":
        return judge.structured_output
    if custom_endpoint(judge) and not litellm_may_know(judge.model):
        return None  # only a probe can tell (and litellm's import is not needed to say so)
    row = bundled_entry(judge.model)
    if row is not None and row.get("supports_response_schema") is True:
        return "json_schema"  # what litellm answers for it, read without importing litellm
    litellm = load_litellm()
    try:
        known = litellm.get_model_info(model=judge.model) is not None
    except Exception:  # noqa: BLE001  # litellm raises assorted errors for a model it does not know; unknown is the answer
        known = False
    if known or not custom_endpoint(judge):
        try:
            return "json_schema" if litellm.supports_response_schema(model=judge.model) else "json_object"
        except Exception:  # noqa: BLE001  # litellm raises assorted errors for a model it does not know; JSON mode is the safe dialect
            return "json_object"
    return None


def _memo_key(judge: Judge) -> str:
    return f"{(judge.api_base or '').rstrip('/')}|{wire_model(judge.model)}"


def _read_file(store: Path | None) -> dict[str, str]:
    if store is None:
        return {}
    try:
        data = json.loads((store / _FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and v in DIALECTS} if isinstance(data, dict) else {}


def _write_file(store: Path | None, key: str, dialect: str) -> None:
    if store is None:
        return
    try:
        store.mkdir(parents=True, exist_ok=True)
        data = {**_read_file(store), key: dialect}
        (store / _FILE).write_text(json.dumps(data, indent=1, sort_keys=True))
    except OSError:
        pass  # remembering is an optimisation: the next run probes again


def resolve(judge: Judge, *, store: Path | None = None) -> str:
    """The dialect ``judge``'s calls use: :func:`static_dialect`, else what :func:`probe` finds
    (remembered per ``api_base`` and model for the process, and in ``store/structured_output.json``)."""
    fixed = static_dialect(judge)
    if fixed is not None:
        return fixed
    key = _memo_key(judge)
    with _LOCK:
        if key in _MEMO:
            return _MEMO[key]
        remembered = _read_file(store).get(key)
        if remembered is not None:
            _MEMO[key] = remembered
            return remembered
        found = probe(judge)
        if found is not None:
            _MEMO[key] = found
            _write_file(store, key, found)
            return found
    return "prompt"


def _post(judge: Judge, body: dict[str, Any]) -> dict[str, Any] | None:
    """One chat-completions POST: the JSON answer, or None when the server refuses the request
    (any HTTP error status: llama-cpp-python answers an unknown ``response_format`` type with a
    500 carrying its validation error). Connection failures raise."""
    import urllib.error  # only when a probe is needed (keeps `import rubrictools` fast)
    import urllib.request

    data = json.dumps(body).encode()
    req = urllib.request.Request(chat_url(judge), data=data, headers=request_headers(judge), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=min(judge.timeout, 120.0)) as r:  # the user's own api_base
            answer: dict[str, Any] = json.loads(r.read())
            return answer
    except urllib.error.HTTPError:
        return None


def _honoured(answer: dict[str, Any] | None) -> bool:
    if not answer:
        return False
    try:
        content = answer["choices"][0]["message"]["content"]
        return bool(json.loads(content).get("probe") == PROBE_VALUE)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return False


def _unsure(judge: Judge, why: str) -> None:
    warnings.warn(
        f"judge {judge.label!r}: could not find the structured-output dialect of {judge.api_base} ({why}); "
        "this run sends the schema in the instructions only (structured_output='prompt'). "
        "Set structured_output= to choose one.",
        RuntimeWarning,
        stacklevel=user_stacklevel(),
    )


def probe(judge: Judge) -> str | None:
    """The first dialect whose schema the server enforces, ``"prompt"`` when it answers but
    enforces none, or None when it could not be asked (then nothing is remembered).

    The probe asks for ``{"probe": "no"}`` under a schema that allows only
    :data:`PROBE_VALUE`: a server that enforces the schema answers with that value; one that
    ignores it answers as asked; one that does not know the dialect refuses the request. At
    most three requests of a few tokens each, once per server and model.
    """
    base = {"model": wire_model(judge.model), "messages": _PROBE_MESSAGES, "temperature": 0, "max_tokens": 24}
    answered = False
    for dialect in DIALECTS[:3]:
        try:
            answer = _post(judge, {**base, **format_fields(dialect, _PROBE_SCHEMA, "probe")})
        except (OSError, ValueError) as e:
            _unsure(judge, scrub(f"{type(e).__name__}: {e}", judge)[:200])
            return None
        if _honoured(answer):
            return dialect
        answered = answered or answer is not None
    if not answered:
        _unsure(judge, "it refused every dialect's request")
        return None
    return "prompt"

"""Robust parsing of judge replies (code fences, surrounding prose) with label validation."""

from __future__ import annotations

import ast
import html
import json
import math
import re
from collections.abc import Sequence
from typing import Any

from rubrictools.rubric import BINARY_LABELS, Criterion, Rubric, normalize_label

__all__ = [
    "ParseError",
    "clean_label",
    "confidence_of",
    "evidence_of",
    "extract_json",
    "item_entries",
    "name_keys",
    "parse_confidence",
    "parse_criterion",
    "parse_evidence",
    "parse_holistic",
    "parse_item",
    "parse_item_evidence",
]


class ParseError(ValueError):
    """The judge's reply could not be turned into a valid verdict."""


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


_LENIENT = json.JSONDecoder(strict=False)
"""Accepts raw control characters (a newline) inside strings: grammar-constrained servers
(llama-cpp-python) let a model write them, and the reply is otherwise valid JSON."""

_ANSWER_KEYS = ("verdict", "verdicts", "score", "label", "criterion_status", "status", "answer")


def _objects(s: str) -> list[Any]:
    """Every top-level JSON object in ``s``: fenced blocks first, else objects embedded in prose."""
    fenced = []
    for m in _FENCE.finditer(s):
        try:
            fenced.append(_LENIENT.decode(m.group(1).strip()))
        except json.JSONDecodeError:
            continue
    if fenced:
        return fenced
    dec = _LENIENT
    found, i = [], 0
    while (i := s.find("{", i)) >= 0:
        try:
            obj, end = dec.raw_decode(s, i)
        except json.JSONDecodeError:
            i += 1
            continue
        found.append(obj)
        i = end
    return found


_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _repaired(s: str) -> list[Any]:
    """The object in a reply that is almost JSON: trailing commas (``{"verdict": "MET",}``) or a
    Python-style dict with single quotes (``{'verdict': 'MET'}``, read with
    :func:`ast.literal_eval`, which evaluates literals only). Empty when it is neither."""
    start, end = s.find("{"), s.rfind("}")
    if start < 0 or end <= start or end - start > 100_000:
        return []
    text = s[start : end + 1]
    try:
        return [_LENIENT.decode(_TRAILING_COMMA.sub(r"\1", text))]
    except json.JSONDecodeError:
        pass
    try:
        obj = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return []
    return [obj] if isinstance(obj, dict) else []


def _answer_part(obj: Any) -> Any:
    return {k: obj[k] for k in _ANSWER_KEYS if k in obj} if isinstance(obj, dict) else None


def extract_json(text: str | None) -> Any:
    """Return the JSON answer in ``text`` (plain, fenced, or embedded in prose).

    When the text holds several JSON objects, the one carrying an answer (``verdict``,
    ``score``, ...) is used; several answers that disagree make the reply ambiguous, a
    :class:`ParseError` (so the call is retried or becomes an error row, never a guess).

    >>> extract_json('Sure! ```json\\n{"verdict": "MET"}\\n``` hope that helps')
    {'verdict': 'MET'}
    >>> extract_json('It says {"verdict": "MET"}; my verdict: {"verdict": "UNMET"}')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rubrictools.judge.parsing.ParseError: ambiguous reply: 2 different answers (...)
    """
    if text is None or not str(text).strip():
        raise ParseError("empty reply")
    s = str(text).strip()
    try:
        return _LENIENT.decode(s)
    except json.JSONDecodeError:
        pass
    objects = _objects(s) or _repaired(s)
    if not objects:
        raise ParseError("reply is not JSON")
    answers = [o for o in objects if _answer_part(o)]
    distinct = {json.dumps(_answer_part(o), sort_keys=True) for o in answers}
    if len(distinct) > 1:
        shown = ", ".join(sorted(distinct))
        raise ParseError(f"ambiguous reply: {len(distinct)} different answers ({shown[:200]})")
    return answers[0] if answers else objects[0]


_TAGS = re.compile(r"</?[A-Za-z_][\w-]*\s*/?>")
_WRAP = "\"'`*_ \t\r\n"
_NESTED = ("label", "verdict", "value", "answer", "status")


def clean_label(raw: Any) -> Any:
    """A reply's label without the wrapping real models put around it: a ``{"label": ...}``
    nesting, surrounding whitespace, quotes, backticks, markdown emphasis, markup tags and a
    final full stop. The word itself is never changed: "Yes" stays "Yes" (and is refused).

    >>> [clean_label(x) for x in ('  **MET**', "'UNMET'.", "<label>MET</label>", {"label": "MET"})]
    ['MET', 'UNMET', 'MET', 'MET']
    """
    if isinstance(raw, dict) and len(raw) >= 1:
        inner = next((raw[k] for k in _NESTED if k in raw), None)
        return clean_label(inner) if inner is not None else raw
    if not isinstance(raw, str):
        return raw
    text = _TAGS.sub(" ", raw).strip(_WRAP)
    text = text[:-1].strip(_WRAP) if text.endswith(".") and not text[:-1].replace(".", "").isdigit() else text
    return text if text else raw


def _label(criterion: Criterion, raw: Any) -> str:
    if criterion.options is None and criterion.range is None and raw in BINARY_LABELS:
        return str(raw)  # the usual binary reply, already canonical
    raw = clean_label(raw)
    if not isinstance(raw, (str, int, float)) or isinstance(raw, bool):
        raise ParseError(f"verdict for {criterion.name!r} is not a string: {raw!r}")
    canon = criterion.canonical_label(str(raw))
    if canon is None:
        if criterion.range is not None:
            raise ParseError(
                f"verdict {raw!r} is not a number from {criterion.range.describe()} for criterion {criterion.name!r}"
            )
        raise ParseError(f"verdict {raw!r} is not one of {list(criterion.labels)} for criterion {criterion.name!r}")
    return canon


def evidence_of(obj: Any) -> str | None:
    """The ``evidence`` (or ``quote``) string of a reply object, ``None`` when absent."""
    if not isinstance(obj, dict):
        return None
    raw = _field(obj, "evidence", "quote", "supporting_quote")
    if isinstance(raw, list):
        raw = " ".join(str(x) for x in raw if x is not None)
    return None if raw is None else str(raw)


def parse_evidence(text: str | None) -> str | None:
    """The quote of a per-criterion reply (``None`` when the reply has none or is not JSON)."""
    try:
        return evidence_of(extract_json(text))
    except ParseError:
        return None


def confidence_of(obj: Any) -> float | None:
    """The ``confidence`` of a reply object: a number from 0 to 1 (``None`` when absent,
    not a number, or outside [0, 1])."""
    if not isinstance(obj, dict):
        return None
    raw = _field(obj, "confidence")
    if isinstance(raw, bool) or raw is None:
        return None
    try:
        x = float(raw)
    except (TypeError, ValueError):
        return None
    return x if 0.0 <= x <= 1.0 else None


def parse_confidence(text: str | None) -> float | None:
    """The confidence of a per-criterion reply (see :func:`confidence_of`)."""
    try:
        return confidence_of(extract_json(text))
    except ParseError:
        return None


def item_entries(text: str | None, rubric: Rubric) -> dict[str, dict[str, Any]]:
    """Criterion name -> its entry (a dict) in a per-item reply; empty when the reply is not JSON."""
    try:
        obj = extract_json(text)
    except ParseError:
        return {}
    entries = obj.get("verdicts") if isinstance(obj, dict) else obj
    if isinstance(entries, dict):
        entries = [{"criterion": k, **(v if isinstance(v, dict) else {})} for k, v in entries.items()]
    if not isinstance(entries, list):
        return {}
    by_key = name_keys(rubric.names)
    out: dict[str, dict[str, Any]] = {}
    for e in entries:
        name = _named(by_key, _field(e, "criterion", "name", "id")) if isinstance(e, dict) else None
        if name is not None:
            out[name] = e
    return out


def parse_item_evidence(text: str | None, rubric: Rubric) -> dict[str, str | None]:
    """Criterion name -> quote of a per-item reply (criteria without a quote are absent)."""
    return {name: evidence_of(e) for name, e in item_entries(text, rubric).items()}


def name_keys(names: Sequence[str]) -> dict[str, str]:
    """Lookup from the forms a judge may echo a criterion name in to the name: as written, and
    as the prompt showed it (escaped), each normalised (:func:`normalize_label`).

    >>> name_keys(["a <b> & c"])["a &lt;b&gt; &amp; c"]
    'a <b> & c'
    """
    keys: dict[str, str] = {}
    for n in names:
        keys.setdefault(normalize_label(html.escape(n, quote=False)), n)
        keys.setdefault(normalize_label(n), n)
    return keys


def _named(keys: dict[str, str], raw: Any) -> str | None:
    """The criterion a reply entry names (as written or escaped), None when it names none."""
    text = str(raw or "")
    return keys.get(normalize_label(text)) or keys.get(normalize_label(html.unescape(text)))


def _lowered(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with its keys in lower case (``obj`` itself when they already are: the usual reply)."""
    for k in obj:
        if not (isinstance(k, str) and k.islower()):
            return {str(k).lower(): v for k, v in obj.items()}
    return obj


def _field(obj: dict[str, Any], *names: str) -> Any:
    """The first of ``names`` the reply object has, in any letter case."""
    return _first(_lowered(obj), names)


def _first(lower: dict[str, Any], names: tuple[str, ...]) -> Any:
    """The first of ``names`` in ``lower`` (keys already in lower case), None when none is."""
    for n in names:
        if n in lower:
            return lower[n]
    return None


_VERDICT_KEYS = ("verdict", "criterion_status", "status", "label", "answer")
_ABOUT_KEYS = ("criterion", "criterion_name")
_EXPLANATION_KEYS = ("explanation", "reason", "reasoning")


def parse_criterion(text: str | None, criterion: Criterion) -> tuple[str, str | None]:
    """Parse a per-criterion reply into ``(label, explanation)``; raises :class:`ParseError`."""
    obj = extract_json(text)
    if not isinstance(obj, dict):
        raise ParseError("reply JSON is not an object")
    obj = _lowered(obj)  # once, for the three lookups below
    raw = _first(obj, _VERDICT_KEYS)
    if raw is None:
        raise ParseError("reply has no 'verdict'")
    about = _first(obj, _ABOUT_KEYS)
    if isinstance(about, str) and about.strip() and _named(name_keys([criterion.name or ""]), about) is None:
        raise ParseError(f"reply is about criterion {about[:80]!r}, not the one asked ({criterion.name!r})")
    expl = _first(obj, _EXPLANATION_KEYS)
    return _label(criterion, raw), None if expl is None else str(expl)


def parse_item(text: str | None, rubric: Rubric) -> tuple[dict[str, tuple[str, str | None]], dict[str, str]]:
    """Parse a per-item reply, aligning entries to criteria **by name**.

    Returns ``(verdicts, problems)``: ``verdicts`` maps criterion name to ``(label,
    explanation)``; ``problems`` maps the criteria that are missing, duplicated or invalid to
    a message. Raises :class:`ParseError` only when the reply is unusable as a whole.
    """
    obj = extract_json(text)
    entries = obj.get("verdicts") if isinstance(obj, dict) else obj
    if isinstance(entries, dict):  # {"name": {"verdict": ...}} or {"name": "MET"}
        entries = [{"criterion": k, **(v if isinstance(v, dict) else {"verdict": v})} for k, v in entries.items()]
    if not isinstance(entries, list):
        raise ParseError("reply has no 'verdicts' list")
    by_key = name_keys(rubric.names)
    out: dict[str, tuple[str, str | None]] = {}
    problems: dict[str, str] = {}
    for e in entries:
        if not isinstance(e, dict):
            continue
        name = _named(by_key, _field(e, "criterion", "name", "id"))
        if name is None:
            continue
        if name in out or name in problems:
            problems[name] = "judge answered this criterion more than once"
            out.pop(name, None)
            continue
        try:
            raw = _field(e, "verdict", "criterion_status", "status", "label")
            if raw is None:
                raise ParseError(f"no verdict for criterion {name!r}")
            expl = _field(e, "explanation", "reason")
            out[name] = (_label(rubric[name], raw), None if expl is None else str(expl))
        except ParseError as err:
            problems[name] = str(err)
    for n in rubric.names:
        if n not in out and n not in problems:
            problems[n] = "judge omitted this criterion"
    return out, problems


def parse_holistic(text: str | None) -> tuple[float, str | None]:
    """Parse a holistic reply into ``(score in [0, 100], explanation)``."""
    obj = extract_json(text)
    if not isinstance(obj, dict):
        raise ParseError("reply JSON is not an object")
    raw = _field(obj, "score", "overall_score")
    try:
        val = float(raw)
    except (TypeError, ValueError):
        raise ParseError(f"score is not a number: {raw!r}") from None
    if not math.isfinite(val) or not 0.0 <= val <= 100.0:
        raise ParseError(f"score {val} is outside 0-100")
    expl = _field(obj, "explanation", "reason")
    return val, None if expl is None else str(expl)

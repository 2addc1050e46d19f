"""What the fake server answers: scripted replies, the default rule, fake logprobs, request readers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Reply",
    "Script",
    "criterion_name",
    "default_script",
    "fake_logprobs",
    "fake_usage",
    "json_or_text",
    "pair_answer",
    "request_image_urls",
    "response_texts",
    "submission_text",
    "user_text",
]


@dataclass
class Reply:
    """What the server sends for one request."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: str | None = None  # raw body override (e.g. an error JSON)
    label_probs: dict[str, float] | None = None  # top alternatives at the verdict token when logprobs are asked
    samples: list[str] | None = None  # contents of the n choices when n > 1 is asked (cycled)
    no_logprobs: bool = False  # behave like a provider that ignores the logprobs request
    finish_reason: str = "stop"  # "length": the reply was cut off at max_tokens
    reasoning: str | None = None  # a reasoning model's trace, sent as the message's reasoning_content
    cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens
    reasoning_tokens: int | None = None  # usage.completion_tokens_details.reasoning_tokens


Script = Callable[[dict[str, Any]], "Reply | str"]


def fake_usage(reply: Reply, prompt: str, content: str) -> dict[str, Any]:
    """The ``usage`` block of a fake answer: about four characters a token (an empty reply: 0),
    plus the reply's cached and reasoning token details when it sets them."""
    pt, ct = max(1, len(prompt) // 4), max(1, len(content) // 4) if content else 0
    usage: dict[str, Any] = {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}
    if reply.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    if reply.reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
    return usage


def _text(content: Any) -> str:
    """A message's text: a string, or its text content parts (image parts are not text)."""
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content or ""


def user_text(request: dict[str, Any]) -> str:
    return "\n".join(_text(m.get("content")) for m in request["messages"] if m["role"] == "user")


def request_image_urls(request: dict[str, Any]) -> list[str]:
    """The URLs (data URIs included) of the image parts a request carries, in order."""
    return [
        p["image_url"]["url"]
        for m in request["messages"]
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if isinstance(p, dict) and p.get("type") == "image_url"
    ]


def criterion_name(request: dict[str, Any]) -> str | None:
    m = re.search(r"^Criterion name: (.+)$", user_text(request), re.M)
    return m.group(1).strip() if m else None


def submission_text(request: dict[str, Any]) -> str:
    m = re.search(r"<submission>\n(.*)\n</submission>", user_text(request), re.S)
    return m.group(1) if m else ""


def response_texts(request: dict[str, Any]) -> tuple[str, str]:
    """The two responses of a pairwise request (``<response_1>``, ``<response_2>``), as shown."""
    text = user_text(request)
    found = [re.search(rf"<response_{n}>\n(.*?)\n</response_{n}>", text, re.S) for n in (1, 2)]
    return found[0].group(1) if found[0] else "", found[1].group(1) if found[1] else ""


def pair_answer(request: dict[str, Any]) -> str:
    """The default pairwise answer: the response containing 'good' wins; both or neither: a tie."""
    one, two = (("good" in t.lower()) for t in response_texts(request))
    answer = "1" if one and not two else "2" if two and not one else "tie"
    return json.dumps({"explanation": "fake pairwise judge", "verdict": answer})


def default_script(request: dict[str, Any]) -> str:
    """MET when the submission contains 'good', per criterion; per-item, holistic and
    pairwise (:func:`pair_answer`) too."""
    if "compare TWO responses" in request["messages"][0]["content"]:
        return pair_answer(request)
    sub = submission_text(request).lower()
    verdict = "MET" if "good" in sub else "UNMET"
    system = request["messages"][0]["content"]
    if "ONE overall score" in system:
        return json.dumps({"score": 80 if verdict == "MET" else 20, "explanation": "fake holistic"})
    if "EVERY criterion" in system:
        names = re.findall(r"^Criterion name: (.+)$", user_text(request), re.M)
        return json.dumps({"verdicts": [{"criterion": n, "verdict": verdict, "explanation": "fake"} for n in names]})
    return json.dumps({"verdict": verdict, "explanation": f"fake judge saw {len(sub)} chars"})


def fake_logprobs(text: str, label_probs: dict[str, float] | None, top: int) -> list[dict[str, Any]]:
    """OpenAI-style token logprobs for ``text``: the verdict's value is one token whose top
    alternatives follow ``label_probs``; every other token is certain. Tokens are split so
    that the value's opening quote belongs to the token before it, as real tokenizers often do."""
    import math
    import re

    m = re.search(r'"verdict"\s*:\s*"', text)
    if m is None:
        return [{"token": text, "logprob": 0.0, "top_logprobs": []}]
    start = m.end()
    end = text.find('"', start)
    value = text[start:end]
    pieces = [(text[:start], None), (value, label_probs), (text[end:], None)]
    out = []
    for tok, probs in pieces:
        if not tok:
            continue
        if probs:
            alts = sorted(probs.items(), key=lambda kv: -kv[1])[: max(top, 1)]
            lp = math.log(probs.get(tok, max(min(probs.values()), 1e-9)))
            out.append(
                {
                    "token": tok,
                    "logprob": lp,
                    "top_logprobs": [{"token": k, "logprob": math.log(v)} for k, v in alts if v > 0],
                }
            )
        else:
            out.append({"token": tok, "logprob": 0.0, "top_logprobs": [{"token": tok, "logprob": 0.0}]})
    return out


def json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text

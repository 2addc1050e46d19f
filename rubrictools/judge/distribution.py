"""A judge's probability for every allowed label of a criterion.

Two sources, tried in this order by ``grade(..., distribution=True)``:

* **token logprobs** (``logprobs=True, top_logprobs=20``): the token where the verdict's
  value starts in the JSON answer carries the model's top alternatives; each alternative
  that is the beginning of exactly one allowed label gives that label its probability
  (``exp(logprob)``), and the captured mass is renormalised. If an alternative could
  begin two labels (labels sharing a first token), logprobs cannot separate them and the
  sampling fallback is used;
* **sampling**: ``n`` answers at temperature 1; the distribution is the share of each label
  among the answers that parse.

>>> from rubrictools.rubric import Criterion
>>> c = Criterion(name="a", requirement="x")
>>> toks = [{"token": '{"verdict": "', "top": []}, {"token": "MET", "top": [("MET", -0.36), ("UN", -1.2)]},
...         {"token": '"}', "top": []}]
>>> d = from_logprobs('{"verdict": "MET"}', toks, c)
>>> {k: round(v, 3) for k, v in d.items()}
{'MET': 0.698, 'UNMET': 0.302, 'CANNOT_ASSESS': 0.0}
"""

from __future__ import annotations

import math
import re
from typing import Any

from rubrictools.judge.parsing import ParseError, parse_criterion
from rubrictools.rubric import Criterion, normalize_label

__all__ = ["from_logprobs", "from_samples", "normalise_logprobs"]

_VALUE_START = re.compile(r'"(?:verdict|label|answer|criterion_status)"\s*:\s*"')


def normalise_logprobs(raw: Any) -> list[dict[str, Any]] | None:
    """Plain ``[{"token": str, "top": [(token, logprob), ...]}, ...]`` from an OpenAI/litellm
    ``choice.logprobs`` object or dict (``None`` when absent)."""
    if raw is None:
        return None
    content = raw.get("content") if isinstance(raw, dict) else getattr(raw, "content", None)
    if not content:
        return None
    out = []
    for t in content:
        get = (lambda o, k: o.get(k)) if isinstance(t, dict) else getattr
        top = get(t, "top_logprobs") or []
        pairs = []
        for alt in top:
            g = (lambda o, k: o.get(k)) if isinstance(alt, dict) else getattr
            pairs.append((str(g(alt, "token")), float(g(alt, "logprob"))))
        out.append({"token": str(get(t, "token")), "top": pairs})
    return out


def from_logprobs(
    content: str | None, tokens: list[dict[str, Any]] | None, criterion: Criterion
) -> dict[str, float] | None:
    """Label probabilities from the alternatives at the verdict token, or None if undetermined."""
    if not content or not tokens:
        return None
    text = "".join(t["token"] for t in tokens)
    if text != content:
        return None
    m = _VALUE_START.search(content)
    if m is None:
        return None
    start = m.end()
    pos = 0
    for tok in tokens:
        end = pos + len(tok["token"])
        if pos <= start < end:
            prefix = content[pos:start]  # part of the token before the value (e.g. a quote)
            labels = [lab for lab in criterion.labels]
            mass: dict[str, float] = {}
            for alt, lp in tok["top"] or [(tok["token"], 0.0)]:
                if prefix and not alt.startswith(prefix):
                    continue
                piece = normalize_label(alt[len(prefix) :].split('"')[0])
                if not piece:
                    continue
                hits = [lab for lab in labels if normalize_label(lab).startswith(piece)]
                if len(hits) > 1:
                    return None  # ambiguous first token: logprobs cannot tell these labels apart
                if hits:
                    mass[hits[0]] = mass.get(hits[0], 0.0) + math.exp(lp)
            total = sum(mass.values())
            if total <= 0:
                return None
            return {lab: mass.get(lab, 0.0) / total for lab in labels}
        pos = end
    return None


def from_samples(contents: list[str | None], criterion: Criterion) -> dict[str, float] | None:
    """Share of each label among sampled answers that parse (None if none parses)."""

    counts: dict[str, int] = {}
    for c in contents:
        try:
            label, _ = parse_criterion(c, criterion)
        except ParseError:
            continue
        counts[label] = counts.get(label, 0) + 1
    n = sum(counts.values())
    if n == 0:
        return None
    return {lab: counts.get(lab, 0) / n for lab in criterion.labels}

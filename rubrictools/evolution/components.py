"""A rubric as GEPA's candidate: the texts evolution may change, never its structure.

GEPA evolves a candidate, a ``{component name: text}`` mapping. A rubric's candidate holds
one component per judge-decided criterion (``criterion:<name>``: its requirement), the
rubric's ``guidelines`` (shown to the judge with every criterion; may start empty) and, when
asked, its ``weights`` (one ``name: weight`` line per scored criterion). Names, kinds, scales,
options, groups, rules and the signs of the weights never change: a candidate that tries to
(an unknown name, a weight of the other sign or zero) is refused with a ``ValueError``.
"""

from __future__ import annotations

from rubrictools.rubric import Criterion, Rubric

__all__ = ["GUIDELINES", "WEIGHTS", "criterion_component", "from_candidate", "to_candidate"]

GUIDELINES = "guidelines"
WEIGHTS = "weights"
_PREFIX = "criterion:"


def criterion_component(name: str) -> str:
    """The component name of a criterion's requirement: ``criterion:<name>``."""
    return f"{_PREFIX}{name}"


def _evolvable(rubric: Rubric) -> list[Criterion]:
    """The criteria a judge decides (rule criteria are decided by code: nothing to word)."""
    return [c for c in rubric if c.rule is None]


def to_candidate(rubric: Rubric, *, weights: bool = False) -> dict[str, str]:
    """The candidate of ``rubric``: each judged criterion's requirement, the guidelines and,
    with ``weights=True``, the weights of the scored criteria.

    >>> import rubrictools as rt
    >>> r = rt.Rubric.from_dict([{"name": "cites", "requirement": "Mentions a source", "weight": 2}])
    >>> to_candidate(r, weights=True)
    {'criterion:cites': 'Mentions a source', 'guidelines': '', 'weights': 'cites: 2'}
    """
    out = {criterion_component(c.name or ""): c.requirement for c in _evolvable(rubric)}
    out[GUIDELINES] = rubric.guidelines or ""
    if weights:
        out[WEIGHTS] = "\n".join(f"{c.name}: {c.weight:g}" for c in rubric if not c.disqualifier and c.weight != 0)
    return out


def _weights(text: str, rubric: Rubric) -> dict[str, float]:
    """``name: weight`` lines, each naming a scored criterion, with the sign it had."""
    out: dict[str, float] = {}
    for line in filter(None, (x.strip() for x in text.strip().strip("`").splitlines())):
        name, _, number = line.partition(":")
        try:
            value = float(number)
        except ValueError:
            raise ValueError(f"weights: a line is not 'name: number': {line!r}") from None
        name = name.strip()
        if name not in rubric.names:
            raise ValueError(f"weights: {name!r} is not a criterion of the rubric ({list(rubric.names)})")
        before = rubric[name].weight
        if value == 0 or (value > 0) != (before > 0):
            raise ValueError(f"weights: {name!r} must keep its sign (was {before:g}, got {value:g})")
        out[name] = value
    return out


def from_candidate(rubric: Rubric, candidate: dict[str, str]) -> Rubric:
    """``rubric`` with the candidate's texts (and weights), its structure unchanged.

    >>> import rubrictools as rt
    >>> r = rt.Rubric.from_dict([{"name": "cites", "requirement": "Mentions a source", "weight": 2}])
    >>> new = from_candidate(r, {"criterion:cites": "Names the source it quotes", "weights": "cites: 3"})
    >>> new["cites"].requirement, new["cites"].weight
    ('Names the source it quotes', 3.0)
    """
    known = {criterion_component(c.name or "") for c in _evolvable(rubric)} | {GUIDELINES, WEIGHTS}
    unknown = sorted(set(candidate) - known)
    if unknown:
        raise ValueError(f"candidate components {unknown} are not part of the rubric ({sorted(known)})")
    weights = _weights(candidate[WEIGHTS], rubric) if WEIGHTS in candidate else {}
    criteria = []
    for c in rubric:
        update: dict[str, object] = {}
        text = candidate.get(criterion_component(c.name or ""))
        if text is not None and c.rule is None:
            if not text.strip():
                raise ValueError(f"candidate gives criterion {c.name!r} an empty requirement")
            if "```" in text:
                raise ValueError(
                    f"candidate gives criterion {c.name!r} a requirement holding a ``` fence (a reply with several "
                    f"blocks?): {text[:60]!r}"
                )
            if _structured(text):
                raise ValueError(
                    f"candidate gives criterion {c.name!r} a rubric structure, not a requirement: {text[:60]!r}"
                )
            update["requirement"] = text.strip()
        if c.name in weights:
            update["weight"] = weights[c.name or ""]
        criteria.append(c.model_copy(update=update) if update else c)
    guidelines = candidate.get(GUIDELINES, rubric.guidelines or "").strip() or None
    return rubric.model_copy(update={"criteria": tuple(criteria), "guidelines": guidelines})


def _structured(text: str) -> bool:
    """Whether a proposed requirement is a rubric structure (JSON or YAML naming fields), not prose."""
    t = text.strip()
    if t[:1] in "[{" and t[-1:] in "]}":
        return True
    first = t.splitlines()[0].lstrip("- ").lower() if t else ""
    return first.startswith(("name:", "requirement:", "weight:", "criteria:"))

"""Read rubrify rubrics: the spec that :meth:`Rubric.from_rubrify <rubrictools.Rubric.from_rubrify>` loads.

rubrify keeps a rubric as a pydantic object; its JSON form (``model_dump_json``) is what a
file holds. :func:`rubrify_spec` reads the parts its documentation describes and maps them
onto the rubrictools model:

=================================== =========================================================
rubrify                             rubrictools
=================================== =========================================================
criterion ``id``                    ``name``
``title`` + ``description``         ``requirement`` (``"title: description"``), with the
                                    criterion's ``mechanical_rules`` appended (``". Rules: a; b"``)
``weight`` (default 1.0)            ``weight``
``scale.kind == "binary"``          binary criterion (MET/UNMET); custom scores become options
``ordinal`` / ``nominal`` anchors   options; anchor value ``v`` -> ``(v - lo) / (hi - lo)``
``numeric`` min/max/step/anchors    ``range`` with anchors ``"label: description"``
``evidence.required``               ``evidence=True``
group ``children`` + aggregation    declared :class:`~rubrictools.Group`; ``weighted_sum`` is
                                    scored on the 0-1 scale like ``weighted_mean`` (same
                                    ranking) and its raw sum is reported as ``raw:<group>``;
                                    a child that is a group nests it (``Group(parent=...)``)
pattern disqualifier                regex rule criterion with ``disqualifier=True``
``patterns`` (pattern library)      weight-0 regex rule criteria ``pattern:<id>`` tagged
                                    ``"pattern"``: never scored; ``rt.score`` lists the hits in
                                    ``pattern_hits``
criterion-linked disqualifier       ``required=True`` on that criterion (0 credit caps at 0)
criterion ``genre``                 ``applies_when={"genre": [genre]}``: asked only for rows whose
                                    ``genre`` column holds it (``NOT_APPLICABLE`` elsewhere)
``decision_thresholds`` (0-100)     ``thresholds`` on the 0-1 score scale; none given: rubrify's
                                    defaults (90 Publish-ready, 75 Strong draft, 60 Workable
                                    draft, 40 Needs major revision, else Fundamentally unclear)
a violated disqualifier's decision  ``disqualified_decision="Rejected"``
``output_constraints``              the rubric's ``output_constraints``
                                    (:class:`~rubrictools.OutputConstraint`, checked on every
                                    reply whenever the rubric is graded): ``target_field``
                                    ``rationale`` is the verdict's explanation, ``hard``
                                    enforcement disqualifies (score capped at 0, decision
                                    Rejected), ``soft`` warns, the ``scope`` is kept (rubrify's
                                    default ``"call"``); ``count`` with ``mode`` is ``min``/``max``
=================================== =========================================================

``goal``, ``instructions``,           the rubric's ``guidelines`` (shown to the judge with every
``definitions``, ``advice_rules``,    criterion), one titled section each; lists become bullet
``advice``                            lines, mappings ``term: definition`` lines

Parts with no rubrictools meaning here (a role: pass ``Judge(role=rt.Role.from_rubrify(...))``;
calibration examples: pass
``grade(examples=...)``; or any criterion field not above) are skipped with one warning that
names every one of them.

Example
-------
>>> import rubrictools as rt
>>> r = rt.Rubric.from_rubrify({"criteria": [{"id": "C1", "title": "Clarity", "description": "How clear?",
...     "scale": {"kind": "numeric", "minimum": 0, "maximum": 5, "step": 1}}]})
>>> r["C1"].kind, r["C1"].requirement
('numeric', 'Clarity: How clear?')
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rubrictools.rubric.constraints import from_rubrify
from rubrictools.rubric.groups import UNGROUPED
from rubrictools.stack import user_stacklevel

__all__ = ["rubrify_spec"]

_GUIDANCE = (  # rubrify's free-text guidance, carried as the rubric's guidelines (shown to the judge)
    ("goal", "Goal"),
    ("instructions", "Instructions"),
    ("definitions", "Definitions"),
    ("advice_rules", "Advice"),
    ("advice", "Advice"),
)
_IGNORED_TOP = (
    "meta",
    "calibration_examples",
    "role",
    "policy",
    "surface_policy",
)
_TAKEN_BY = {  # rubrify parts that belong to a grading run or a judge, not to the rubric: where they go
    "role": "pass Judge(role=rt.Role.from_rubrify(spec['role']))",
    "calibration_examples": "pass grade(examples=...), a table of labelled submissions",
    "meta": "metadata: no rubrictools equivalent",
}
_CRITERION_KEYS = {"id", "title", "description", "weight", "scale", "evidence", "genre", "mechanical_rules"}
DEFAULT_DECISIONS = [  # rubrify's decision labels when a rubric gives none (0-100 scale)
    ("Publish-ready", 0.90),
    ("Strong draft", 0.75),
    ("Workable draft", 0.60),
    ("Needs major revision", 0.40),
    ("Fundamentally unclear", 0.0),
]
REJECTED = "Rejected"
_GROUP_AGG = {
    "weighted_sum": "weighted_sum",
    "weighted_mean": "weighted_mean",
    "min": "min",
    "max": "max",
    "all": "all",
    "any": "any",
}


def _load(source: Any) -> dict[str, Any]:
    if isinstance(source, Mapping):
        return dict(source)
    if hasattr(source, "model_dump"):
        return source.model_dump(mode="json")
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("{")):
        p = Path(source)
        if not p.is_file():
            raise FileNotFoundError(f"rubrify rubric file not found: {p}")
        source = p.read_text(encoding="utf-8")
    try:
        data = json.loads(source)
    except json.JSONDecodeError as e:
        raise ValueError(f"rubrify: invalid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"rubrify: expected a JSON object, got {type(data).__name__}")
    return data


def _anchor_list(scale: dict[str, Any], where: str) -> list[dict[str, Any]]:
    anchors = scale.get("anchors") or scale.get("levels") or scale.get("categories") or []
    if not isinstance(anchors, list) or not anchors:
        raise ValueError(f"{where}: an {scale.get('kind')} scale needs a non-empty 'anchors' list")
    out = []
    for i, a in enumerate(anchors):
        if not isinstance(a, Mapping) or "label" not in a:
            raise ValueError(f"{where}: anchors[{i}] needs at least a 'label'")
        out.append(dict(a))
    return out


def _criterion(c: Mapping[str, Any], i: int) -> dict[str, Any]:
    if "id" not in c:
        raise ValueError(f"rubrify: criteria[{i}] has no 'id'")
    cid = str(c["id"])
    where = f"rubrify: criterion {cid!r}"
    title, desc = c.get("title"), c.get("description")
    requirement = ": ".join(str(x) for x in (title, desc) if x) or cid
    rules = c.get("mechanical_rules") or []
    rules = [rules] if isinstance(rules, str) else [str(r) for r in rules]
    if rules:  # rubrify renders them into the judge's prompt: so does the requirement
        requirement += ". Rules: " + "; ".join(rules)
    out: dict[str, Any] = {"name": cid, "requirement": requirement, "weight": float(c.get("weight", 1.0))}
    scale = c.get("scale") or {"kind": "binary"}
    kind = scale.get("kind")
    if kind == "binary":
        t, f = float(scale.get("true_score", 1.0)), float(scale.get("false_score", 0.0))
        if (t, f) != (1.0, 0.0):
            lo, hi = min(t, f), max(t, f)
            span = hi - lo or 1.0
            out["options"] = [
                {"label": str(scale.get("true_label", "pass")), "value": (t - lo) / span},
                {"label": str(scale.get("false_label", "fail")), "value": (f - lo) / span},
            ]
    elif kind in ("ordinal", "nominal"):
        anchors = _anchor_list(scale, where)
        values = [float(a.get("value", k)) for k, a in enumerate(anchors)]
        lo, hi = min(values), max(values)
        span = hi - lo or 1.0
        out["options"] = [
            {
                "label": str(a["label"]),
                "value": (v - lo) / span,
                **({"description": a["description"]} if a.get("description") else {}),
            }
            for a, v in zip(anchors, values, strict=False)
        ]
        out["scale"] = kind
    elif kind == "numeric":
        if "minimum" not in scale or "maximum" not in scale:
            raise ValueError(f"{where}: a numeric scale needs 'minimum' and 'maximum'")
        rng: dict[str, Any] = {"min": scale["minimum"], "max": scale["maximum"]}
        if scale.get("step") is not None:
            rng["step"] = scale["step"]
        anchors = scale.get("anchors") or []
        rng["anchors"] = {
            float(a["value"]): ": ".join(str(x) for x in (a.get("label"), a.get("description")) if x) for a in anchors
        }
        out["range"] = rng
    else:
        raise ValueError(f"{where}: unknown scale kind {kind!r} (binary, ordinal, nominal, numeric)")
    ev = c.get("evidence")
    if isinstance(ev, Mapping) and ev.get("required"):
        out["evidence"] = True
    if c.get("genre"):  # active only for that genre: the graded frame's 'genre' column
        out["applies_when"] = {"genre": [str(c["genre"])]}
    return out


def _lines(value: Any) -> list[str]:
    """Bullet lines of a guidance part: text as is, a list item per line, ``key: value`` pairs."""
    if value is None or value == "" or value == [] or value == {}:
        return []
    if isinstance(value, str):
        return [value.strip()]
    if isinstance(value, Mapping):
        return [f"- {k}: {' '.join(_lines(v))}" for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            if isinstance(item, Mapping):
                out.append("- " + "; ".join(f"{k}: {v}" for k, v in item.items() if v not in (None, "", [], {})))
            else:
                out.append(f"- {str(item).strip()}")
        return out
    return [str(value)]


def _guidelines(data: Mapping[str, Any]) -> str | None:
    sections = []
    for key, title in _GUIDANCE:
        lines = _lines(data.get(key))
        if lines:
            sections.append(f"{title}:\n" + "\n".join(lines))
    return "\n\n".join(sections) or None


def _patterns(entries: list[Any]) -> list[dict[str, Any]]:
    """rubrify's pattern library: each entry a weight-0 regex rule criterion tagged ``"pattern"``
    (checked on every submission without a judge, never scored; ``rt.score`` lists the hits)."""
    out = []
    for i, p in enumerate(entries):
        if not isinstance(p, Mapping):
            raise ValueError(f"rubrify: patterns[{i}]: expected an object with 'pattern', got {type(p).__name__}")
        regex = p.get("pattern") or p.get("regex")
        if not regex:
            raise ValueError(f"rubrify: patterns[{i}]: no 'pattern'")
        pid = str(p.get("id") or p.get("name") or f"p{i + 1}")
        out.append(
            {
                "name": f"pattern:{pid}",
                "requirement": str(p.get("description") or p.get("label") or f"matches {regex}"),
                "weight": 0,
                "rule": {"regex": regex, "flags": "i" if p.get("case_insensitive", True) else ""},
                "tags": ["pattern"],
            }
        )
    return out


def rubrify_spec(source: Any) -> dict[str, Any]:
    """The rubrictools rubric spec (a dict for :meth:`Rubric.from_dict`) of a rubrify rubric.

    ``source`` is a dict (``Rubric.model_dump()``), a rubrify object, JSON text or a path to
    a ``.json`` file. Unknown criterion ids in groups or disqualifiers, a group holding both criteria and groups, and
    unknown scale kinds raise ``ValueError`` naming the field.
    """
    data = _load(source)
    if "rubric" in data and isinstance(data["rubric"], Mapping) and "criteria" not in data:
        data = {**data, **data["rubric"]}
    crits = data.get("criteria")
    if not isinstance(crits, list) or not crits:
        raise ValueError("rubrify: expected a non-empty 'criteria' list")
    criteria = [_criterion(c, i) for i, c in enumerate(crits)]
    by_id = {c["name"]: c for c in criteria}
    skipped = [
        f"{k} ({_TAKEN_BY.get(k, 'no rubrictools equivalent')})"
        for k in data
        if k in _IGNORED_TOP and data[k] and k not in ("policy", "surface_policy")
    ]
    for k in ("policy", "surface_policy"):
        other = sorted(set(data.get(k) or {}) - {"decision_thresholds"}) if isinstance(data.get(k), Mapping) else []
        if other:
            how = " (grade(mode='grouped' | 'holistic'), grade(criterion_context='full'|'focused'), Judge(role=...))"
            skipped.append(f"{k} fields {other}{how}")
    for raw in crits:  # every criterion field with no rubrictools meaning, by name
        dropped = sorted(k for k, v in raw.items() if k not in _CRITERION_KEYS and v not in (None, "", [], {}))
        if dropped:
            skipped.append(f"criterion {str(raw.get('id'))!r}: {dropped} (no rubrictools equivalent)")

    groups: list[dict[str, Any]] = []
    raw_groups = data.get("groups") or []
    group_ids = [str(g.get("id") or g.get("name") or f"g{i + 1}") for i, g in enumerate(raw_groups)]
    parent_of: dict[str, str] = {}
    for gid, g in zip(group_ids, raw_groups, strict=True):
        agg = _GROUP_AGG.get(str(g.get("aggregation", "weighted_mean")))
        if agg is None:
            raise ValueError(f"rubrify: group {gid!r}: unknown aggregation {g.get('aggregation')!r}")
        for child in map(str, g.get("children") or []):
            if child in group_ids:  # a group of groups: the child's sub-score counts in this one
                parent_of[child] = gid
            elif child in by_id:
                by_id[child]["group"] = gid
            else:
                raise ValueError(f"rubrify: group {gid!r}: child {child!r}: no such criterion or group")
        groups.append({"name": gid, "weight": float(g.get("weight", 1.0)), "aggregation": agg})
    for g in groups:
        if g["name"] in parent_of:
            g["parent"] = parent_of[g["name"]]
    if groups:  # rubrify leaves ungrouped criteria at top level: give them their own group
        loose = [c for c in criteria if "group" not in c]
        if loose:
            for c in loose:
                c["group"] = UNGROUPED
            groups.append({"name": UNGROUPED, "weight": 1.0, "aggregation": "weighted_mean"})

    for i, d in enumerate(data.get("disqualifiers") or []):
        did = str(d.get("id") or f"dq{i + 1}")
        linked = d.get("criterion_id") or d.get("criterion")
        if d.get("pattern"):
            flags = "i" if d.get("case_insensitive", True) else ""
            criteria.append(
                {
                    "name": did,
                    "requirement": str(d.get("description") or f"matches {d['pattern']}"),
                    "rule": {"regex": d["pattern"], "flags": flags},
                    "disqualifier": True,
                }
            )
        elif linked:
            if str(linked) not in by_id:
                raise ValueError(f"rubrify: disqualifier {did!r}: no criterion {linked!r}")
            by_id[str(linked)]["required"] = True
        else:
            raise ValueError(f"rubrify: disqualifier {did!r} has neither 'pattern' nor 'criterion_id'")

    criteria += _patterns(data.get("patterns") or [])
    policy = data.get("policy") or data.get("surface_policy") or {}
    raw_cuts = data.get("decision_thresholds") or (
        policy.get("decision_thresholds") if isinstance(policy, Mapping) else None
    )
    thresholds = None
    if raw_cuts:
        pairs = []
        for t in raw_cuts:
            if isinstance(t, Mapping):
                pairs.append((str(t.get("label")), float(t.get("min_score", t.get("min", 0))) / 100.0))
            else:
                a, b = t
                pairs.append((str(b), float(a) / 100.0) if not isinstance(a, str) else (a, float(b) / 100.0))
        thresholds = sorted(pairs, key=lambda p: -p[1])
    if skipped:
        warnings.warn(
            f"rubrify: parts the rubric does not carry (each with the option that takes it): {'; '.join(skipped)}",
            stacklevel=user_stacklevel(),
        )
    payload: dict[str, Any] = {"criteria": criteria, "thresholds": thresholds or DEFAULT_DECISIONS}
    guidance = _guidelines(data)
    if guidance is not None:
        payload["guidelines"] = guidance
    if groups:
        payload["groups"] = groups
    carried = _constraints(data.get("output_constraints"))  # carried by the rubric: every grade checks them
    if carried:
        payload["output_constraints"] = [c.model_dump(exclude_defaults=True) for c in carried]
    if data.get("disqualifiers") or any(c.enforcement == "disqualify" for c in carried):
        payload["disqualified_decision"] = REJECTED
    return payload


def _constraints(raw: Any) -> list[Any]:
    """A rubrify file's ``output_constraints`` (a list of mappings, or one) as OutputConstraints."""
    if not raw:
        return []
    items = [raw] if isinstance(raw, Mapping) else raw
    if isinstance(items, (str, bytes)) or not isinstance(items, list):
        raise ValueError(f"rubrify: output_constraints must be a list of mappings, got {type(raw).__name__}")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"rubrify: output_constraints[{i}] must be a mapping, got {type(item).__name__}")
        try:
            out.append(from_rubrify(item))
        except (ValueError, TypeError) as e:
            raise ValueError(f"rubrify: output_constraints[{i}]: {e}") from None
    return out

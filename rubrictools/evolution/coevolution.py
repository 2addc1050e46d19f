"""Co-evolution (rubrify's ``evolve_rubric_v3``): the search's own settings evolve with the rubric.

``evolve_rubric(coevolve=[...])`` lets the run rewrite, beside the rubric's texts:

- ``"gate"``: ``gate:<name>``, the requirement of each judged criterion of the proposal gate's
  rubric (needs ``gate=`` with at least one judged criterion; a rule criterion's text
  describes its rule and is left alone);
- ``"templates"``: ``template:<kind>``, the reflection prompt of each kind of component the
  run evolves (``requirement``, ``guidelines``, ``weights``);
- ``"acceptance"``: ``acceptance``, the acceptance rule's tolerances, one ``objective:
  tolerance`` line per objective (needs ``acceptance=`` tolerances).

Rubrify packs these into GEPA's candidate; a candidate that changes only a setting grades the
same as its parent, so it is always kept and spends GEPA's budget (a minibatch and a
validation pass) and its patience without testing anything: at an equal budget such a run
fixes fewer criteria than a plain one. Here the settings live beside the search
(:class:`Settings`), never in GEPA's candidate: GEPA's budget and ``patience`` go to the
rubric alone, and a setting costs reflection calls only.

How a setting changes. Each rubric rewrite is proposed with the settings in force (the
template of its kind, the gate's rubric) and decided by the tolerances in force; its outcome
goes to the run's :class:`History`. Once a setting has :data:`NEW_EVIDENCE` new records since
its last version, the reflection model writes a new version from them
(:data:`~rubrictools.evolution.reflection.SETTING_TEMPLATES`): a template from the rewrites it
produced (kept, not kept, turned down by the gate, with each objective's change on the
minibatch); a gate criterion from its verdicts the test contradicted (met but not kept,
missed but kept; a failed gate call says nothing) and, when the gate turns most rewrites down,
from those it stopped, with the gate's reasons; the tolerances from the decisions in which
an objective fell, and how kept rewrites then fared on the validation set.

How a version is judged. A new version is kept while the rewrites made under it succeed at
least as often as under the version it replaced (a template: the share of its kind's rewrites
the test kept; a gate criterion: the share of tested rewrites where its verdict agreed with
the test; the tolerances: the share of the rewrites they kept that then raised the validation
score); after :data:`NEW_EVIDENCE` settled rewrites, a version that does worse is reverted,
and a rewrite that repeats a reverted version is refused. New versions are asked for after
each outcome: a rewrite tested, or one the gate turned down.

``RubricEvolution.settings`` holds the versions in force at the end, ``changed`` (the settings
whose value differs from the start) and ``log`` (every version: adopted, reverted or refused,
with how its rewrites had fared by the end of the run). ``cost_usd`` counts the settings'
reflection calls with the others (a function as the reflection model has no cost).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from rubrictools.evolution.acceptance import OBJECTIVES, ToleranceAcceptance
from rubrictools.evolution.gate import ProposalGate
from rubrictools.evolution.reflection import SETTING_TEMPLATES, component_kind, templates_for
from rubrictools.rubric import Rubric

__all__ = [
    "ACCEPTANCE",
    "COEVOLVABLE",
    "GATE_PREFIX",
    "MAX_SETTING_CHARS",
    "NEW_EVIDENCE",
    "TEMPLATE_PREFIX",
    "History",
    "Rewrite",
    "Settings",
    "check_coevolve",
    "fenced",
    "render",
    "tolerances_of",
]

COEVOLVABLE = ("gate", "templates", "acceptance")
"""What ``evolve_rubric(coevolve=...)`` may evolve beside the rubric."""

NEW_EVIDENCE = 3
"""New records a setting needs before the reflection model writes a new version of it, and
settled rewrites a version needs before it is judged against the one before."""

MAX_SETTING_CHARS = 8000
"""The longest setting accepted from the reflection model (a template is sent with every
rewrite; a runaway reply would be too)."""

GATE_PREFIX = "gate:"
TEMPLATE_PREFIX = "template:"
ACCEPTANCE = "acceptance"
_SHOWN_RECORDS = 8  # the most past rewrites shown when a setting is rewritten


def check_coevolve(
    coevolve: Any, *, gate: ProposalGate | None, acceptance: Any, reflection_template: Any
) -> tuple[str, ...]:
    """``coevolve=`` as a tuple of :data:`COEVOLVABLE` names, refused before any call, naming
    what is missing for each."""
    if coevolve is None:
        return ()
    if isinstance(coevolve, (str, Mapping)) or not isinstance(coevolve, Collection):
        raise TypeError(f"coevolve must be a list of {list(COEVOLVABLE)} (or None), got {coevolve!r}")
    what = tuple(coevolve)
    unknown = [w for w in what if w not in COEVOLVABLE]
    if unknown:
        raise ValueError(f"coevolve names {unknown}; it can evolve {list(COEVOLVABLE)}")
    if len(set(what)) != len(what):
        raise ValueError(f"coevolve names a setting twice: {list(what)}")
    if "gate" in what and gate is None:
        raise ValueError("coevolve 'gate' evolves the proposal gate's rubric: pass gate=ProposalGate(model=...)")
    if "gate" in what and gate is not None and all(c.rule is not None for c in gate.rubric):
        raise ValueError("coevolve 'gate': the gate's rubric has only rule criteria, whose texts are not evolved")
    if "acceptance" in what and not isinstance(acceptance, Mapping):
        raise ValueError(
            "coevolve 'acceptance' evolves tolerances: pass acceptance= a mapping of tolerances by objective, "
            f"e.g. {{'discrimination': 0.05}} (got {acceptance!r})"
        )
    if "templates" in what and isinstance(reflection_template, Mapping):
        named = sorted(str(k) for k in reflection_template if str(k).startswith("criterion:"))
        if named:
            raise ValueError(
                f"coevolve 'templates' evolves one reflection template per kind; reflection_template names components "
                f"{named}: give it by kind (requirement, guidelines, weights)"
            )
    return what


def tolerances_of(text: str) -> dict[str, float]:
    """``objective: tolerance`` lines, one per objective, each in [0, 1]; a bad line or a
    missing objective raises ValueError naming it."""
    out: dict[str, float] = {}
    for line in filter(None, (x.strip() for x in text.strip().splitlines())):
        name, _, number = line.partition(":")
        name = name.strip().strip("-* ").lower()
        try:
            value = float(number)
        except ValueError:
            raise ValueError(f"acceptance: a line is not 'objective: tolerance': {line!r}") from None
        if name not in OBJECTIVES:
            raise ValueError(f"acceptance: {name!r} is not one of the objectives {list(OBJECTIVES)}")
        if name in out:
            raise ValueError(f"acceptance: {name!r} is given twice")
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"acceptance: the tolerance of {name!r} must be in [0, 1], got {value:g}")
        out[name] = value
    missing = [k for k in OBJECTIVES if k not in out]
    if missing:
        raise ValueError(f"acceptance: no tolerance for {missing} (one line per objective)")
    return out


def gate_rubric_of(texts: Mapping[str, str], base: Rubric) -> Rubric:
    """``base`` (the gate's rubric) with the requirements ``texts`` gives its judged criteria."""
    criteria = []
    for c in base:
        text = texts.get(f"{GATE_PREFIX}{c.name}", c.requirement).strip() if c.rule is None else c.requirement
        if not text or "```" in text:
            raise ValueError(f"{GATE_PREFIX}{c.name}: the rewrite must be a plain-text requirement, got {text[:60]!r}")
        criteria.append(c.model_copy(update={"requirement": text}))
    return base.model_copy(update={"criteria": tuple(criteria)})


def _check_setting(component: str, text: str, gate_rubric: Rubric | None) -> None:
    """A proposed setting refused (ValueError, naming it) when the search could not use it."""
    if len(text) > MAX_SETTING_CHARS:
        raise ValueError(f"{component}: the rewrite has {len(text):,} characters, over {MAX_SETTING_CHARS:,}")
    if component.startswith(TEMPLATE_PREFIX):
        counts = {p: text.count(p) for p in ("<curr_param>", "<side_info>")}
        if any(n != 1 for n in counts.values()):
            raise ValueError(f"{component}: the rewrite must hold each placeholder once, got {counts}")
        if "```" not in text:
            raise ValueError(f"{component}: the rewrite no longer asks for the reply inside a ``` block")
    elif component == ACCEPTANCE:
        tolerances_of(text)
    elif gate_rubric is not None:
        gate_rubric_of({component: text}, gate_rubric)


@dataclass
class Rewrite:
    """One rewrite of a rubric text proposed this run, and what became of it."""

    component: str
    text: str
    checks: list[dict[str, Any]] = field(default_factory=list)  # the gate's checks of it
    turned_down: bool = False
    kept: bool | None = None  # None: not evaluated (yet)
    before: dict[str, float] = field(default_factory=dict)  # minibatch means by objective
    after: dict[str, float] = field(default_factory=dict)
    candidate: dict[str, str] | None = None
    parent: int | None = None
    validation: tuple[float, float] | None = None  # (its validation score, its parent's), when kept
    versions: dict[str, int] = field(default_factory=dict)  # the settings' versions it was made under


@dataclass
class History:
    """The rewrites of this run."""

    rewrites: list[Rewrite] = field(default_factory=list)

    def records(self, component: str) -> list[dict[str, Any]]:
        """The reflective records a setting is rewritten from (see the module docstring)."""
        return [_record(r, said) for r, said in self.evidence(component)][-_SHOWN_RECORDS:]

    def evidence(self, component: str) -> list[tuple[Rewrite, str]]:
        """What a setting can learn from, with what each case says about it."""
        if component.startswith(TEMPLATE_PREFIX):
            kind = component.removeprefix(TEMPLATE_PREFIX)
            return [(r, _outcome(r)) for r in self.rewrites if component_kind(r.component) == kind and _settled(r)]
        if component.startswith(GATE_PREFIX):
            return self._gate_evidence(component.removeprefix(GATE_PREFIX))
        # the tolerances matter only where an objective fell on the minibatch
        return [(r, _validation(r)) for r in self.rewrites if r.kept is not None and _fell(r)]

    def _gate_evidence(self, name: str) -> list[tuple[Rewrite, str]]:
        """A gate criterion's verdicts the test contradicted (checks whose gate call failed say
        nothing) and, when the gate turns most rewrites down, those it turned down for it."""
        recent = self.rewrites[-_SHOWN_RECORDS:]
        strict = len(recent) >= 2 and sum(r.turned_down for r in recent) * 2 >= len(recent)
        out = []
        for r in self.rewrites:
            check = r.checks[-1] if r.checks else None
            if check is None or check.get("error"):
                continue
            met = name not in check.get("missed", [])
            if r.kept is not None and met != r.kept:
                out.append((r, f"the criterion was {'met' if met else 'missed'}; the test then {_outcome(r)}"))
            elif r.turned_down and strict and not met:
                said = check.get("reason") or "no reason given"
                out.append((r, f"the criterion was missed and the reviewer turned the rewrite down ({said})"))
        return out

    def settle(self, candidate: Mapping[str, str], parent: Mapping[str, str], parent_id: int, eval_: Any) -> None:
        """Record the outcome of a proposal: which rewrites it holds, kept or not."""
        before, after, kept = eval_
        for k, v in candidate.items():
            if parent.get(k) == v:
                continue
            match = next((r for r in reversed(self.rewrites) if r.component == k and r.text == v), None)
            if match is not None and match.kept is None:
                match.kept, match.before, match.after = kept, before, after
                match.candidate, match.parent = dict(candidate), parent_id

    def score_kept(self, state: Any) -> None:
        """Each kept rewrite's validation score against its parent's, once GEPA has it."""
        pool = list(getattr(state, "program_candidates", []))
        scores = list(getattr(state, "prog_candidate_val_subscores", []))
        for r in self.rewrites:
            if r.kept and r.validation is None and r.candidate in pool and r.parent is not None:
                mine, theirs = scores[pool.index(r.candidate)], scores[r.parent]
                if mine and theirs:
                    r.validation = (float(np.mean(list(mine.values()))), float(np.mean(list(theirs.values()))))


class Settings:
    """The co-evolved settings of a run: each one's versions, the one in force, and their log
    (see the module docstring)."""

    def __init__(
        self, what: Sequence[str], *, components: Sequence[str], gate: ProposalGate | None, acceptance: Any,
        reflection_template: Any,
    ) -> None:  # fmt: skip
        start: dict[str, str] = {}
        if "gate" in what and gate is not None:  # a rule criterion's text only describes its rule
            start |= {f"{GATE_PREFIX}{c.name}": c.requirement for c in gate.rubric if c.rule is None}
        if "templates" in what:
            given = templates_for(reflection_template, components)
            for c in components:
                start.setdefault(f"{TEMPLATE_PREFIX}{component_kind(c)}", given if isinstance(given, str) else given[c])
        if "acceptance" in what:
            tolerances = ToleranceAcceptance(acceptance).tolerances
            start[ACCEPTANCE] = "\n".join(f"{k}: {v:g}" for k, v in tolerances.items())
        self.gate = gate
        self.versions: dict[str, list[str]] = {k: [v] for k, v in start.items()}
        self.current: dict[str, int] = dict.fromkeys(start, 0)
        self.asked: dict[str, int] = dict.fromkeys(start, 0)  # evidence a setting had at its last rewrite
        self.replaced: dict[str, dict[int, int]] = {k: {} for k in start}  # version -> the version it replaced
        self.reverted: dict[str, set[int]] = {k: set() for k in start}
        self.log: list[dict[str, Any]] = [
            {"setting": k, "version": 0, "event": "start", "text": v} for k, v in start.items()
        ]
        self.history = History()

    def text(self, component: str) -> str | None:
        """The version in force of ``component`` (None when it is not co-evolved)."""
        return self.versions[component][self.current[component]] if component in self.current else None

    def in_force(self) -> dict[str, str]:
        return {k: self.versions[k][i] for k, i in self.current.items()}

    def gate_rubric(self) -> Rubric | None:
        return gate_rubric_of(self.in_force(), self.gate.rubric) if self.gate is not None else None

    def tolerances(self) -> dict[str, float] | None:
        return (
            tolerances_of(self.versions[ACCEPTANCE][self.current[ACCEPTANCE]]) if ACCEPTANCE in self.current else None
        )

    def due(self) -> list[str]:
        """The settings with :data:`NEW_EVIDENCE` new records since their last rewrite."""
        return [k for k in self.current if len(self.history.evidence(k)) - self.asked[k] >= NEW_EVIDENCE]

    def propose(self, component: str, ask: Any) -> None:
        """Ask ``ask`` for a new version of ``component`` from its records; adopt it when usable."""
        self.asked[component] = len(self.history.evidence(component))
        kind = "template" if component.startswith(TEMPLATE_PREFIX) else component.partition(":")[0]
        text = fenced(ask(render(SETTING_TEMPLATES[kind], self.text(component) or "", self.history.records(component))))
        try:
            _check_setting(component, text, self.gate.rubric if self.gate is not None else None)
        except ValueError as e:
            self.log.append({"setting": component, "version": None, "event": "refused", "text": str(e)})
            return
        if _same(component, text, self.text(component) or ""):
            return
        if any(_same(component, text, self.versions[component][v]) for v in self.reverted[component]):
            why = f"{component}: the rewrite repeats a version reverted for doing worse"
            self.log.append({"setting": component, "version": None, "event": "refused", "text": why})
            return
        self.versions[component].append(text)
        self.replaced[component][len(self.versions[component]) - 1] = self.current[component]
        self.current[component] = len(self.versions[component]) - 1
        self.log.append({"setting": component, "version": self.current[component], "event": "adopted", "text": text})

    def judge(self) -> None:
        """Revert each setting whose version in force did worse than the version it replaced."""
        for k, v in self.current.items():
            before = self.replaced[k].get(v)
            if before is None:
                continue
            now, then = self.success(k, v), self.success(k, before)
            if now is not None and then is not None and now[1] >= NEW_EVIDENCE and now[0] < then[0]:
                self.current[k] = before
                self.reverted[k].add(v)
                self.log.append({"setting": k, "version": v, "event": "reverted", "text": self.versions[k][v]})

    def update(self, ask: Any) -> None:
        """After an outcome: revert what did worse, then ask for new versions of the settings due."""
        self.judge()
        for component in self.due():
            try:
                self.propose(component, ask)
            except Exception as e:  # noqa: BLE001  # a failed setting rewrite leaves the version in force; counted in the log
                self.log.append({"setting": component, "version": None, "event": "failed",
                                 "text": f"{type(e).__name__}: {e}"})  # fmt: skip

    def success(self, component: str, version: int) -> tuple[float, int] | None:
        """How the rewrites made under ``version`` fared, and how many there are: for a template,
        the share of its kind's settled rewrites the test kept; for a gate criterion, the share
        of tested rewrites where its verdict agreed with the test (met and kept, missed and not
        kept); for the tolerances, the share of the rewrites they kept that then raised the
        validation score."""
        mine = [r for r in self.history.rewrites if r.versions.get(component) == version]
        if component == ACCEPTANCE:
            done = [r.validation[0] > r.validation[1] for r in mine if r.kept and r.validation is not None]
        elif component.startswith(GATE_PREFIX):
            name = component.removeprefix(GATE_PREFIX)
            checked = [
                (r, r.checks[-1]) for r in mine if r.kept is not None and r.checks and not r.checks[-1].get("error")
            ]
            done = [(name not in check.get("missed", [])) == r.kept for r, check in checked]
        else:
            kind = component.removeprefix(TEMPLATE_PREFIX)
            done = [bool(r.kept) for r in mine if _settled(r) and component_kind(r.component) == kind]
        return (sum(done) / len(done), len(done)) if done else None

    def log_of(self, *events: str) -> list[str]:
        """The log's texts of ``events`` (e.g. why new versions were refused)."""
        return [f"{e['setting']}: {e['text']}" if not str(e["text"]).startswith(e["setting"]) else str(e["text"])
                for e in self.log if e["event"] in events]  # fmt: skip

    def result(self) -> dict[str, Any]:
        """What ``RubricEvolution.settings`` holds (see the module docstring)."""
        gate = self.gate_rubric() if any(k.startswith(GATE_PREFIX) for k in self.current) else None
        templates = {
            k.removeprefix(TEMPLATE_PREFIX): v for k, v in self.in_force().items() if k.startswith(TEMPLATE_PREFIX)
        }
        changed = [k for k in self.current if not _same(k, self.versions[k][0], self.text(k) or "")]
        rows = []
        for entry in self.log:
            fared = self.success(entry["setting"], entry["version"]) if entry["version"] is not None else None
            rows.append({**entry, "rewrites": fared[1] if fared else 0, "success": fared[0] if fared else None})
        schema = {"setting": pl.String, "version": pl.Int64, "event": pl.String, "text": pl.String,
                  "rewrites": pl.Int64, "success": pl.Float64}  # fmt: skip
        return {"gate_rubric": gate, "reflection_templates": templates or None, "acceptance": self.tolerances(),
                "changed": sorted(changed), "log": pl.DataFrame(rows, schema=schema)}  # fmt: skip


def _same(component: str, a: str, b: str) -> bool:
    """Two versions of a setting mean the same (tolerances compared as values)."""
    if component == ACCEPTANCE:
        try:
            return tolerances_of(a) == tolerances_of(b)
        except ValueError:
            return False
    return a.strip() == b.strip()


def _settled(r: Rewrite) -> bool:
    return r.turned_down or r.kept is not None


def _fell(r: Rewrite) -> bool:
    return any(r.after.get(k, 0) < r.before.get(k, 0) - 1e-12 for k in OBJECTIVES)


def _outcome(r: Rewrite) -> str:
    if r.turned_down:
        reasons = r.checks[-1].get("reason") if r.checks else None
        return f"the reviewer turned it down ({reasons or 'no reason given'})"
    return "kept it" if r.kept else "did not keep it"


def _change(r: Rewrite) -> str:
    return ", ".join(f"{k} {r.before.get(k, 0):.3f} -> {r.after.get(k, 0):.3f}" for k in OBJECTIVES)


def _validation(r: Rewrite) -> str:
    if not r.kept:
        return "not kept: how it would have fared on validation is unknown"
    if r.validation is None:
        return "kept; not yet scored on the validation set"
    mine, theirs = r.validation
    return f"validation score {mine:.3f} against its parent's {theirs:.3f} ({mine - theirs:+.3f})"


def _record(r: Rewrite, feedback: str) -> dict[str, Any]:
    inputs = {"part of the rubric": r.component, "rewrite": r.text[:800]}
    if r.kept is not None:
        inputs["minibatch change"] = _change(r)
    return {
        "Inputs": inputs,
        "Generated Outputs": "turned down" if r.turned_down else ("kept" if r.kept else "not kept"),
        "Feedback": feedback,
    }


_PLACEHOLDERS = re.compile(r"<curr_param>|<side_info>")


def _side_info(records: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for i, r in enumerate(records, 1):
        inputs = "\n".join(f"- {k}: {v}" for k, v in dict(r.get("Inputs", {})).items())
        parts.append(f"# Case {i}\n{inputs}\nOutcome: {r.get('Generated Outputs')}\nDetail: {r.get('Feedback')}")
    return "\n\n".join(parts) or "(nothing yet)"


def render(template: str, current: str, records: Sequence[Mapping[str, Any]]) -> str:
    """``template`` with its placeholders filled in one pass (a current text that is itself a
    template keeps its own placeholders)."""
    fill = {"<curr_param>": current, "<side_info>": _side_info(records)}
    return _PLACEHOLDERS.sub(lambda m: fill[m.group(0)], template)


def fenced(reply: str) -> str:
    """The text between a reply's first and last fences of three or more backticks (the whole
    reply without them); a first line that is a bare word (a language tag such as ``yaml``) is
    dropped, one with a colon (``agreement: 0.1``) kept."""
    opening = re.search(r"`{3,}", reply)
    closing = list(re.finditer(r"`{3,}", reply))
    if opening is not None and closing and closing[-1].start() > opening.end():
        body = reply[opening.end() : closing[-1].start()]
    else:
        body = re.sub(r"`{3,}", "", reply)
    first, _, rest = body.partition("\n")
    if rest and re.fullmatch(r"[A-Za-z0-9_+-]*", first.strip()):
        body = rest
    return body.strip()

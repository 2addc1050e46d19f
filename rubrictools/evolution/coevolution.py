"""Co-evolution (rubrify's ``evolve_rubric_v3``): the search's own settings evolve with the rubric.

``evolve_rubric(coevolve=[...])`` adds to GEPA's candidate, beside the rubric's texts:

- ``"gate"``: ``gate:<name>``, the requirement of each judged criterion of the proposal gate's
  rubric (needs ``gate=``; a rule criterion's text describes its rule and is left alone);
- ``"templates"``: ``template:<kind>``, the reflection prompt of each kind of component the
  run evolves (``requirement``, ``guidelines``, ``weights``);
- ``"acceptance"``: ``acceptance``, the acceptance rule's tolerances, one ``objective:
  tolerance`` line each (needs ``acceptance=`` tolerances).

GEPA picks components in turn (round robin), these among them. A rubric text is rewritten
with the template, and checked by the gate, of the candidate it is proposed from, and kept by
that candidate's tolerances; like GEPA's own reflection, a text with no disagreement in its
minibatch is not rewritten (no call).

How a setting is chosen. The reflection model rewrites a setting from what it did in this run
(:class:`History`): a template from the rewrites it produced (kept, not kept, turned down by
the gate, with each objective's change on the minibatch); a gate criterion from its verdicts
the test contradicted (met but not kept, missed but kept; a failed gate call says nothing)
and, when the gate turns most rewrites down, from those it stopped; the tolerances from the
decisions they made and how kept candidates fared on the validation set. A setting is
rewritten only when it has :data:`NEW_EVIDENCE` new records since its last rewrite. Its
rewrite cannot be tested on the spot (a setting does not change how the rubric grades, so the
minibatch scores the same): it is kept when it parses, as rubrify keeps meta-components "on
non-degradation". What selects settings is the lineage: GEPA chooses parents by their
validation scores, so the settings of candidates whose rubric texts did well are the ones
rewriting goes on from. ``RubricEvolution.settings`` holds those of the best rubric's
lineage (the latest candidate with its texts), with ``changed``: which differ from the start.

What it costs. A candidate that changes only settings grades nothing new: each submission is
graded once per rubric text of the run, with the cache or without. But GEPA counts its
evaluations against ``max_metric_calls`` (a minibatch and, when kept, the validation set), so
co-evolution leaves fewer evaluations for the rubric: ``RubricEvolution.graded`` counts the
submissions actually graded, ``metric_calls`` GEPA's budget. Give co-evolution a larger
budget than a plain run.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rubrictools.evolution.acceptance import OBJECTIVES, ToleranceAcceptance
from rubrictools.evolution.gate import ProposalGate, ProposalRejected, gated
from rubrictools.evolution.reflection import SETTING_TEMPLATES, component_kind, templates_for
from rubrictools.rubric import Rubric

__all__ = [
    "ACCEPTANCE",
    "COEVOLVABLE",
    "NEW_EVIDENCE",
    "History",
    "NothingToLearn",
    "SettingsAcceptance",
    "SettingsProposer",
    "check_coevolve",
    "fenced",
    "is_setting",
    "latest_settings",
    "rubric_part",
    "settings_candidate",
    "settings_of",
]

COEVOLVABLE = ("gate", "templates", "acceptance")
"""What ``evolve_rubric(coevolve=...)`` may evolve beside the rubric."""

GATE_PREFIX = "gate:"
TEMPLATE_PREFIX = "template:"
ACCEPTANCE = "acceptance"
_SHOWN_RECORDS = 8  # the most past rewrites shown when a setting is rewritten


def is_setting(component: str) -> bool:
    """Whether a candidate component is one of the search's settings, not the rubric's text."""
    return component.startswith((GATE_PREFIX, TEMPLATE_PREFIX)) or component == ACCEPTANCE


def rubric_part(candidate: Mapping[str, str]) -> dict[str, str]:
    """The candidate's rubric texts, without the settings."""
    return {k: v for k, v in candidate.items() if not is_setting(k)}


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


def settings_candidate(
    what: Sequence[str],
    *,
    components: Sequence[str],
    gate: ProposalGate | None,
    acceptance: Any,
    reflection_template: Any,
) -> dict[str, str]:
    """The settings' starting texts, as candidate components (see the module docstring)."""
    out: dict[str, str] = {}
    if "gate" in what and gate is not None:  # a rule criterion's text only describes its rule: not evolved
        out |= {f"{GATE_PREFIX}{c.name}": c.requirement for c in gate.rubric if c.rule is None}
    if "templates" in what:
        given = templates_for(reflection_template, components)
        for c in components:
            out.setdefault(f"{TEMPLATE_PREFIX}{component_kind(c)}", given if isinstance(given, str) else given[c])
    if "acceptance" in what:
        out[ACCEPTANCE] = _tolerance_text(ToleranceAcceptance(acceptance).tolerances)
    return out


def _tolerance_text(tolerances: Mapping[str, float]) -> str:
    return "\n".join(f"{k}: {v:g}" for k, v in tolerances.items())


def tolerances_of(text: str) -> dict[str, float]:
    """``objective: tolerance`` lines (each objective once, each tolerance in [0, 1]); a bad
    line raises ValueError naming it."""
    out: dict[str, float] = {}
    for line in filter(None, (x.strip() for x in text.strip().splitlines())):
        name, _, number = line.partition(":")
        name = name.strip().strip("-* ").lower()
        try:
            value = float(number)
        except ValueError:
            raise ValueError(f"acceptance: a line is not 'objective: tolerance': {line!r}") from None
        if name not in OBJECTIVES or name in out:
            raise ValueError(f"acceptance: {name!r} is not one of the objectives {list(OBJECTIVES)}, once each")
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"acceptance: the tolerance of {name!r} must be in [0, 1], got {value:g}")
        out[name] = value
    if not out:
        raise ValueError("acceptance: no 'objective: tolerance' line")
    return out


def gate_rubric_of(candidate: Mapping[str, str], base: Rubric) -> Rubric:
    """``base`` (the gate's rubric) with the requirements the candidate gives its criteria."""
    criteria = []
    for c in base:
        text = candidate.get(f"{GATE_PREFIX}{c.name}", c.requirement).strip() if c.rule is None else c.requirement
        if not text or "```" in text:
            raise ValueError(f"{GATE_PREFIX}{c.name}: the rewrite must be a plain-text requirement, got {text[:60]!r}")
        criteria.append(c.model_copy(update={"requirement": text}))
    return base.model_copy(update={"criteria": tuple(criteria)})


def check_setting(component: str, text: str, gate_rubric: Rubric | None) -> None:
    """A proposed setting refused (ValueError) when the search could not use it."""
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


def latest_settings(candidates: Sequence[Mapping[str, str]], best: Mapping[str, str]) -> Mapping[str, str]:
    """The most recent candidate with the best candidate's rubric texts: the settings evolved
    while the best rubric stood (GEPA names the first of equal scores best, the one before
    any setting changed)."""
    mine = rubric_part(best)
    return next((c for c in reversed(candidates) if rubric_part(c) == mine), best)


def settings_of(candidate: Mapping[str, str], gate: ProposalGate | None) -> dict[str, Any]:
    """The settings a candidate carries, as the run uses them: ``gate_rubric``,
    ``reflection_templates`` (by kind) and ``acceptance`` (tolerances); None for those not evolved."""
    templates = {k.removeprefix(TEMPLATE_PREFIX): v for k, v in candidate.items() if k.startswith(TEMPLATE_PREFIX)}
    has_gate = gate is not None and any(k.startswith(GATE_PREFIX) for k in candidate)
    return {
        "gate_rubric": gate_rubric_of(candidate, gate.rubric) if has_gate and gate is not None else None,
        "reflection_templates": templates or None,
        "acceptance": tolerances_of(candidate[ACCEPTANCE]) if ACCEPTANCE in candidate else None,
    }


class NothingToLearn(Exception):
    """A setting GEPA picked has no record of what it did this run yet: not rewritten (GEPA skips it)."""


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


@dataclass
class History:
    """The rewrites of this run, the settings proposals refused as unusable, and how much a
    setting had to learn from when it was last rewritten."""

    rewrites: list[Rewrite] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    learned: dict[str, int] = field(default_factory=dict)  # setting -> evidence() at its last rewrite

    def records(self, component: str) -> list[dict[str, Any]]:
        """The reflective records a setting is rewritten from (see the module docstring)."""
        return [_record(r, said) for r, said in self._evidence(component)][-_SHOWN_RECORDS:]

    def evidence(self, component: str) -> int:
        """How many records a setting has to learn from in all (new ones make a rewrite worth asking)."""
        return len(self._evidence(component))

    def _evidence(self, component: str) -> list[tuple[Rewrite, str]]:
        if component.startswith(TEMPLATE_PREFIX):
            kind = component.removeprefix(TEMPLATE_PREFIX)
            return [(r, _outcome(r)) for r in self.rewrites if component_kind(r.component) == kind and _settled(r)]
        if component.startswith(GATE_PREFIX):
            return self._gate_evidence(component.removeprefix(GATE_PREFIX))
        return [(r, _validation(r)) for r in self.rewrites if r.kept is not None]

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
                out.append((r, "the criterion was missed and the reviewer turned the rewrite down: never tested"))
        return out

    def settle(self, candidate: Mapping[str, str], parent: Mapping[str, str], parent_id: int, eval_: Any) -> None:
        """Record the outcome of a proposal that changed rubric texts."""
        before, after, kept = eval_
        for k, v in candidate.items():
            if is_setting(k) or parent.get(k) == v:
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


def _settled(r: Rewrite) -> bool:
    return r.turned_down or r.kept is not None


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


def _means(evaluation: Any) -> dict[str, float]:
    rows = list(getattr(evaluation, "objective_scores", None) or [])
    return {k: float(np.mean([row.get(k, 0.0) for row in rows])) if rows else 0.0 for k in OBJECTIVES}


class SettingsAcceptance:
    """GEPA's acceptance rule under co-evolution: a mutation of settings only is kept when no
    objective fell; a mutation of the rubric by the tolerances of the candidate it came from
    (``acceptance`` co-evolved) or by ``base`` (``"improvement"``, ``"improvement_or_equal"``
    or a :class:`ToleranceAcceptance`). Every outcome goes to ``history``."""

    def __init__(self, base: str | ToleranceAcceptance, history: History) -> None:
        self.base, self.history = base, history

    def _decide(self, proposal: Any, state: Any) -> tuple[bool, Mapping[str, str], int]:
        pid = proposal.parent_program_ids[0]
        parent = state.program_candidates[pid]
        changed = [k for k, v in proposal.candidate.items() if parent.get(k) != v]
        before, after = _means(proposal.eval_before), _means(proposal.eval_after)
        if changed and all(is_setting(k) for k in changed):
            return all(after[k] >= before[k] - 1e-12 for k in OBJECTIVES), parent, pid
        if ACCEPTANCE in parent:
            rule: Any = ToleranceAcceptance(tolerances_of(parent[ACCEPTANCE]))
        else:
            rule = self.base
        if isinstance(rule, ToleranceAcceptance):
            return rule.should_accept(proposal, state), parent, pid
        old, new = sum(proposal.subsample_scores_before or []), sum(proposal.subsample_scores_after or [])
        return (new > old if rule == "improvement" else new >= old), parent, pid

    def should_accept(self, proposal: Any, state: Any) -> bool:
        """GEPA's ``AcceptanceCriterion``."""
        self.history.score_kept(state)
        kept, parent, pid = self._decide(proposal, state)
        means = (_means(proposal.eval_before), _means(proposal.eval_after), kept)
        self.history.settle(proposal.candidate, parent, pid, means)
        return kept

    def reject_reason(self, proposal: Any, state: Any) -> str:
        """Why a mutation was not kept, for GEPA's log."""
        before, after = _means(proposal.eval_before), _means(proposal.eval_after)
        return ", ".join(f"{k} {before[k]:.3f} -> {after[k]:.3f}" for k in OBJECTIVES)


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


class SettingsProposer:
    """GEPA's ``custom_candidate_proposer`` under co-evolution: rewrites each component it is
    given with the reflection model ``ask``; a rubric text with the candidate's own template
    (or ``templates``, the run's, when templates are not evolved) and through the candidate's
    own gate (when ``gate`` is given); a setting with :data:`SETTING_TEMPLATES`, refused when
    unusable. GEPA re-asks a proposal that raised: the same request's failure is raised again
    without asking twice."""

    def __init__(
        self, ask: Any, *, templates: str | Mapping[str, str], gate: ProposalGate | None, history: History,
        gate_log: list[dict[str, Any]],
    ) -> None:  # fmt: skip
        self.ask, self.templates, self.gate, self.history, self.gate_log = ask, templates, gate, history, gate_log
        self._failed: tuple[Any, BaseException] | None = None

    def __call__(
        self, candidate: dict[str, str], reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
        components_to_update: list[str],
    ) -> dict[str, str]:  # fmt: skip
        request = (sorted(candidate.items()), list(components_to_update))
        if self._failed is not None and self._failed[0] == request:
            raise self._failed[1]
        try:
            out = {c: self._rewrite(c, candidate, reflective_dataset.get(c, [])) for c in components_to_update}
        except Exception as e:
            self._failed = (request, e)
            raise
        self._failed = None
        return out

    def _template(self, component: str, candidate: Mapping[str, str]) -> str:
        own = candidate.get(f"{TEMPLATE_PREFIX}{component_kind(component)}")
        if own is not None:
            return own
        return self.templates if isinstance(self.templates, str) else self.templates[component]

    def _rewrite(self, component: str, candidate: dict[str, str], records: Sequence[Mapping[str, Any]]) -> str:
        from gepa.strategies.instruction_proposal import (  # reason: gepa is the optional [evolve] extra
            InstructionProposalSignature,
        )

        if is_setting(component):
            return self._rewrite_setting(component, candidate, records)
        if not records:  # no disagreement to learn from: GEPA's own reflection skips it too
            raise NothingToLearn(f"{component}: no disagreement in the minibatch")
        prompt = InstructionProposalSignature.prompt_renderer(  # GEPA's own rendering, as without co-evolution
            {"current_instruction_doc": candidate[component], "dataset_with_feedback": list(records),
             "prompt_template": self._template(component, candidate)}
        )  # fmt: skip
        checks: list[dict[str, Any]] = []
        ask = self.ask
        if self.gate is not None:
            gate = replace(self.gate, rubric=gate_rubric_of(candidate, self.gate.rubric))
            ask = gated(self.ask, gate, checks)
        try:
            text = InstructionProposalSignature.output_extractor(ask(prompt))["new_instruction"]
        except ProposalRejected:
            self.history.rewrites.append(Rewrite(component, "", checks, turned_down=True))
            raise
        finally:
            self.gate_log.extend(checks)
        self.history.rewrites.append(Rewrite(component, text, checks))
        return text

    def _rewrite_setting(self, component: str, candidate: dict[str, str], records: Sequence[Mapping[str, Any]]) -> str:
        """A setting rewritten from what it did; not asked before :data:`NEW_EVIDENCE` new records."""
        seen = self.history.evidence(component)
        if seen - self.history.learned.get(component, 0) < NEW_EVIDENCE:
            raise NothingToLearn(f"{component}: fewer than {NEW_EVIDENCE} new records since its last rewrite")
        self.history.learned[component] = seen
        kind = "template" if component.startswith(TEMPLATE_PREFIX) else component.partition(":")[0]
        text = fenced(self.ask(render(SETTING_TEMPLATES[kind], candidate[component], records)))
        try:
            check_setting(component, text, self.gate.rubric if self.gate is not None else None)
        except (TypeError, ValueError) as e:
            self.history.refused.append(str(e))
            raise
        return text


NEW_EVIDENCE = 3
"""New records a setting needs since its last rewrite before it is rewritten again: a setting
does not change how the rubric grades, so its rewrite is kept unless nothing parses, and each
rewrite spends GEPA's budget (:mod:`rubrictools.evolution.coevolution`)."""


def fenced(reply: str) -> str:
    """The text between a reply's first and last ``` fences (the whole reply without them); a
    first line that is a bare word (a language tag such as ``yaml``) is dropped, one with a colon
    (``agreement: 0.1``) kept."""
    start, end = reply.find("```"), reply.rfind("```")
    body = reply[start + 3 : end] if 0 <= start < end else reply.replace("```", "")
    first, _, rest = body.partition("\n")
    if rest and re.fullmatch(r"[A-Za-z0-9_+-]*", first.strip()):
        body = rest
    return body.strip()

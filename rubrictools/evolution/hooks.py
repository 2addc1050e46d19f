"""GEPA's proposer and acceptance rule under co-evolution (:mod:`rubrictools.evolution.coevolution`).

GEPA's candidate holds the rubric's texts only. :class:`SettingsProposer` rewrites a text with
the template in force for its kind and through the gate rubric in force; :class:`SettingsAcceptance`
decides with the tolerances in force, records each outcome, reverts a version that does worse
than the one before it, and asks for new versions of the settings that have new evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from rubrictools.evolution.acceptance import ToleranceAcceptance, objective_change, objective_means
from rubrictools.evolution.coevolution import TEMPLATE_PREFIX, Rewrite, Settings
from rubrictools.evolution.gate import ProposalGate, ProposalRejected, gated
from rubrictools.evolution.reflection import component_kind

__all__ = ["NothingToLearn", "SettingsAcceptance", "SettingsProposer"]


class NothingToLearn(Exception):
    """A rubric text with no disagreement in its minibatch: not rewritten (GEPA skips it, as its
    own reflection does)."""


class SettingsProposer:
    """GEPA's ``custom_candidate_proposer`` under co-evolution: rewrites each rubric text it is
    given with the reflection model ``ask``, using the template of its kind in force (else the
    run's ``templates``) and, with a ``gate``, the gate rubric in force. GEPA re-asks a
    proposal that raised: the same request's failure is raised again without asking twice."""

    def __init__(
        self, ask: Any, *, templates: str | Mapping[str, str], settings: Settings, gate: ProposalGate | None,
        gate_log: list[dict[str, Any]],
    ) -> None:  # fmt: skip
        self.ask, self.templates, self.settings, self.gate, self.gate_log = ask, templates, settings, gate, gate_log
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

    def _template(self, component: str) -> str:
        own = self.settings.text(f"{TEMPLATE_PREFIX}{component_kind(component)}")
        if own is not None:
            return own
        return self.templates if isinstance(self.templates, str) else self.templates[component]

    def _rewrite(self, component: str, candidate: dict[str, str], records: Sequence[Mapping[str, Any]]) -> str:
        from gepa.strategies.instruction_proposal import (  # reason: gepa is the optional [evolve] extra
            InstructionProposalSignature,
        )

        if not records:  # no disagreement to learn from: GEPA's own reflection skips it too
            raise NothingToLearn(f"{component}: no disagreement in the minibatch")
        prompt = InstructionProposalSignature.prompt_renderer(  # GEPA's own rendering, as without co-evolution
            {"current_instruction_doc": candidate[component], "dataset_with_feedback": list(records),
             "prompt_template": self._template(component)}
        )  # fmt: skip
        checks: list[dict[str, Any]] = []
        ask = self.ask
        gate_rubric = self.settings.gate_rubric()
        if self.gate is not None:
            ask = gated(self.ask, replace(self.gate, rubric=gate_rubric or self.gate.rubric), checks)
        versions = dict(self.settings.current)
        try:
            text = InstructionProposalSignature.output_extractor(ask(prompt))["new_instruction"]
        except ProposalRejected:
            stopped = str(checks[-1].get("proposal", "")) if checks else ""
            rewrite = Rewrite(component, stopped, checks, turned_down=True, versions=versions)
            self.settings.history.rewrites.append(rewrite)
            self.settings.update(self.ask)  # a gate that stops everything must still learn from it
            raise
        finally:
            self.gate_log.extend(checks)
        self.settings.history.rewrites.append(Rewrite(component, text, checks, versions=versions))
        return text


class SettingsAcceptance:
    """GEPA's acceptance rule under co-evolution: a mutation is kept by the tolerances in force
    (``acceptance`` co-evolved) or by ``base`` (``"improvement"``, ``"improvement_or_equal"`` or
    a :class:`ToleranceAcceptance`); every outcome goes to the settings' history, after which a
    worse version is reverted and the settings with new evidence get new versions from ``ask``."""

    def __init__(self, base: str | ToleranceAcceptance, settings: Settings, ask: Any) -> None:
        self.base, self.settings, self.ask = base, settings, ask

    def _decide(self, proposal: Any, state: Any) -> bool:
        tolerances = self.settings.tolerances()
        rule: Any = ToleranceAcceptance(tolerances) if tolerances is not None else self.base
        if isinstance(rule, ToleranceAcceptance):
            return bool(rule.should_accept(proposal, state))
        old, new = sum(proposal.subsample_scores_before or []), sum(proposal.subsample_scores_after or [])
        return new > old if rule == "improvement" else new >= old

    def should_accept(self, proposal: Any, state: Any) -> bool:
        """GEPA's ``AcceptanceCriterion``."""
        history = self.settings.history
        history.score_kept(state)
        kept = self._decide(proposal, state)
        pid = proposal.parent_program_ids[0]
        outcome = (objective_means(proposal.eval_before), objective_means(proposal.eval_after), kept)
        history.settle(proposal.candidate, state.program_candidates[pid], pid, outcome)
        self.settings.update(self.ask)
        return kept

    def reject_reason(self, proposal: Any, state: Any) -> str:
        """Why a mutation was not kept, for GEPA's log."""
        return objective_change(proposal)

"""`evolve_rubric`: rubrify's GEPA rubric evolution, through rubrictools' own cached grading.

1. The labelled submissions are split once into a **held-out** part (never shown, never used to
   choose) and a training part, itself split into GEPA's **train** set (minibatches the
   reflection model learns from) and **validation** set (where candidates are tracked, with
   Pareto selection over the submissions).
2. GEPA (the ``gepa`` package, the ``[evolve]`` extra) evolves the rubric's texts (each judged
   criterion's requirement, the guidelines and, with ``evolve_weights=True``, the weights; see
   :mod:`rubrictools.evolution.components`): it grades minibatches with the judge
   (:class:`rubrictools.evolution.adapter.RubricAdapter`), shows the reflection model the
   disagreements, and keeps a mutation when it raises the minibatch's agreement.
3. After GEPA stops (``max_metric_calls`` graded submissions), the initial and the best rubric
   are graded on the held-out part and compared there with a paired cluster-bootstrap interval
   (:func:`rubrictools.compare`, pooled over criteria), as :func:`rubrictools.search_rubric` does.

When to use which: :func:`rubrictools.improve` rewrites one criterion per round (cheapest);
:func:`rubrictools.search_rubric` rewrites the whole rubric per round and keeps what raises
training agreement (a greedy climb, a handful of proposals); ``evolve_rubric`` runs GEPA's
population search with per-component reflection and Pareto selection, for budgets of a
hundred graded submissions or more.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rubrictools.diagnostics.disagreements import holdout_change, holdout_split
from rubrictools.evolution.acceptance import acceptance_rule
from rubrictools.evolution.adapter import RubricAdapter
from rubrictools.evolution.checks import FEW_HELD_OUT, check_human, check_labels, check_settings, split_train
from rubrictools.evolution.coevolution import Settings, check_coevolve
from rubrictools.evolution.components import from_candidate, to_candidate
from rubrictools.evolution.gate import ProposalGate, gated
from rubrictools.evolution.hooks import SettingsAcceptance, SettingsProposer
from rubrictools.evolution.reflection import (
    ReflectionsFailed,
    asked_once,
    reflection_lm,
    templates_for,
)
from rubrictools.frames import to_polars
from rubrictools.metrics.resampling import check_resampling
from rubrictools.rubric import Rubric
from rubrictools.stack import user_stacklevel

__all__ = ["RubricEvolution", "evolve_rubric"]


@dataclass
class RubricEvolution:
    """The result of :func:`evolve_rubric`.

    The best ``rubric`` (``initial`` is the start), the
    ``candidates`` GEPA kept (``candidate, parent, validation_score, changed, mutated``), the ``holdout``
    comparison (one row: ``value_before, value_after, diff, ci_low, ci_high, p_value``), the
    per-criterion ``by_criterion``, the ``split`` (train / validation / holdout per id), the
    graded submissions GEPA spent (``metric_calls``), the cost of the judge, the reflection
    model and the gate (``cost_usd``) and, with a ``gate``, one row per gate check
    (``gate_log``: ``attempt, score, passed, error, cost_usd, reason``: what the proposal missed, or why the
    check failed); ``graded``: the submissions the search handed to the grader (the cache
    answers those it has seen); with ``coevolve``, ``settings``: the versions in force at the
    end (``gate_rubric``, ``reflection_templates`` by kind, ``acceptance`` tolerances; None for
    those not evolved), ``changed`` (the settings whose value differs from the start) and
    ``log`` (one row per version: ``setting, version, event`` (start, adopted, reverted,
    refused, failed), ``text, rewrites, success``). ``candidates`` says per candidate what
    differs from the start (``changed``) and from its parent (``mutated``)."""

    rubric: Rubric
    initial: Rubric
    candidates: pl.DataFrame
    holdout: pl.DataFrame
    by_criterion: pl.DataFrame
    split: pl.DataFrame = field(repr=False)
    metric_calls: int = 0
    cost_usd: float = 0.0
    gate_log: pl.DataFrame = field(default_factory=lambda: _gate_log([]), repr=False)
    settings: dict[str, Any] = field(default_factory=dict, repr=False)
    graded: int = 0

    @property
    def gain(self) -> float | None:
        """The held-out change in agreement (after - before)."""
        return self.holdout["diff"][0] if self.holdout.height else None

    def changes(self) -> pl.DataFrame:
        """``criterion, before, after`` for every criterion whose requirement or weight changed,
        and a ``(guidelines)`` row when the guidelines did."""
        rows = [
            (c.name, f"{c.requirement} (weight {c.weight:g})", f"{n.requirement} (weight {n.weight:g})")
            for c, n in zip(self.initial, self.rubric, strict=True)
            if (c.requirement, c.weight) != (n.requirement, n.weight)
        ]
        if (self.initial.guidelines or "") != (self.rubric.guidelines or ""):
            rows.append(("(guidelines)", self.initial.guidelines or "", self.rubric.guidelines or ""))
        return pl.DataFrame(rows, schema=["criterion", "before", "after"], orient="row")

    def __repr__(self) -> str:
        h = self.holdout.row(0, named=True) if self.holdout.height else {}
        ci = "" if not h or h["ci_low"] is None else f" [{h['ci_low']:+.3f}, {h['ci_high']:+.3f}]"
        gain = "" if not h or h["diff"] is None else f"; held-out change {h['diff']:+.3f}{ci}"
        budget = f" ({self.metric_calls} of the budget)" if self.metric_calls != self.graded else ""
        moved = self.settings.get("changed") if self.settings else None
        settings = f"; settings changed: {', '.join(moved)}" if moved else ""
        return (
            f"RubricEvolution({self.candidates.height} candidates, {self.graded} submissions graded{budget}, "
            f"{_changed_words(self.changes()['criterion'].to_list())}{gain}{settings})"
        )


def _candidates(result: Any, initial: dict[str, str]) -> pl.DataFrame:
    """One row per candidate: what differs from the start (``changed``) and from its parent (``mutated``)."""
    rows = []
    for i, (cand, parents, val) in enumerate(
        zip(result.candidates, result.parents, result.val_aggregate_scores, strict=True)
    ):
        parent = next((p for p in parents if p is not None), None)
        before = result.candidates[parent] if parent is not None else initial
        rows.append({"candidate": i, "parent": parent, "validation_score": float(val),
                     "changed": sorted(k for k, v in cand.items() if v != initial.get(k)),
                     "mutated": sorted(k for k, v in cand.items() if v != before.get(k))})  # fmt: skip
    text = pl.List(pl.String())
    schema: dict[str, pl.DataType] = {"candidate": pl.Int64(), "parent": pl.Int64(),
                                      "validation_score": pl.Float64(), "changed": text, "mutated": text}  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


def evolve_rubric(
    df: Any,
    human: Any,
    rubric: Rubric,
    *,
    model: Any,
    reflection_model: Any,
    column: str = "submission",
    id_column: str = "id",
    max_metric_calls: int = 200,
    holdout: float = 0.3,
    validation: float = 0.5,
    minibatch_size: int = 5,
    agreement_weight: float = 1.0,
    discrimination_weight: float = 0.0,
    consistency_weight: float = 0.0,
    consistency_runs: int = 1,
    evolve_weights: bool = False,
    reflection_template: str | Mapping[str, str] | None = None,
    gate: ProposalGate | None = None,
    acceptance: str | Mapping[str, float] = "improvement",
    coevolve: Sequence[str] = (),
    patience: int | None = None,
    metric: str = "cohen_kappa",
    n_resamples: int = 1000,
    seed: int = 0,
    cache: bool | str = True,
    verbose: bool = False,
) -> RubricEvolution:
    """Evolve the wording of a rubric with GEPA against human labels (see the module docstring).

    Parameters
    ----------
    df, human, rubric
        The submissions (``id_column``, ``column``), long human labels ``id, criterion,
        label[, rater]`` for (some of) them, and the rubric to start from.
    model
        The grading judge, as in :func:`rubrictools.grade` (a model string, a Judge, a
        ScriptedJudge or a custom grader).
    reflection_model
        Who rewrites: a model string, a :class:`~rubrictools.Judge`, or a function ``prompt ->
        text`` returning the new text in a fenced block (between three backticks).
    max_metric_calls
        GEPA's budget: submissions evaluated during the search (a submission evaluated with a
        candidate counts once, whatever the number of criteria). GEPA checks it once per
        iteration, so a run can go over by up to one validation pass and two minibatches;
        reflection and gate calls are not counted in it.
    holdout, validation
        Share of the labelled submissions held out for the final comparison; share of the rest
        used as GEPA's validation set (the others are its training set).
    minibatch_size
        Training submissions shown to the reflection model per mutation.
    agreement_weight, discrimination_weight, consistency_weight
        Each submission's score: ``(w_a * agreement + w_d * discrimination + w_c * consistency)
        / (w_a + w_d + w_c)``: agreement ``1 - mean |judge value - human value|``,
        discrimination the normalised entropy of the batch's rubric scores, consistency ``1 -
        CV`` of the submission's rubric scores over ``consistency_runs`` gradings (rubrify's
        meta-metrics; keep ``w_d = 0`` with fewer than about 10 submissions per batch).
        Acceptance tolerances cover agreement and discrimination; consistency counts in the
        score and in GEPA's Pareto selection.
    consistency_runs
        Gradings of each submission during the search (1 to 10; at least 2 with
        ``consistency_weight > 0``), each a separate sample of the judge (a model string or a
        Judge, at a temperature above 0: at 0 the repeats barely differ). They multiply the
        judge's calls in the search; the held-out part is graded once. With the cache, a
        re-run reuses the same samples.
    evolve_weights
        Also evolve the weights of the scored criteria (signs never change).
    reflection_template
        The reflection prompt, with ``<curr_param>`` and ``<side_info>``: one text for every
        component, or a mapping by kind (``requirement``, ``guidelines``, ``weights``) or by
        component name (``criterion:<name>``); what it leaves out gets its default,
        :data:`rubrictools.evolution.reflection.REFLECTION_TEMPLATES` (one prompt per kind).
    gate
        A :class:`rubrictools.evolution.ProposalGate`: a small rubric and judge that check each
        proposed text before it is evaluated, sending it back with reasons (rubrify v3's
        proposal quality gate). ``None``: every proposal is evaluated.
    acceptance
        When a mutation is kept on its minibatch: ``"improvement"`` (the score sum rises, GEPA's
        rule), ``"improvement_or_equal"``, or tolerances by objective, e.g.
        ``{"discrimination": 0.05}``: some objective's mean rises and none falls by more than
        its tolerance (rubrify's multi-dimensional acceptance; see
        :mod:`rubrictools.evolution.acceptance`).
    coevolve
        Settings that evolve with the rubric in the same run (rubrify's co-evolution,
        ``evolve_rubric_v3``): a list of any of ``"gate"`` (the gate rubric's requirements;
        needs ``gate``), ``"templates"`` (the reflection prompt of each kind; a
        ``reflection_template`` mapping must then be keyed by kind) and ``"acceptance"`` (the
        tolerances; needs ``acceptance`` tolerances); ``()`` or None: none. The reflection model
        writes a new version of a setting from what it did in the run, and a version that does
        worse than the one before is reverted. Settings stay out of GEPA's candidate, so GEPA's
        budget and ``patience`` go to the rubric alone; a setting costs reflection calls. The
        versions in force at the end, and their log, are in ``RubricEvolution.settings``; see
        :mod:`rubrictools.evolution.coevolution`.
    patience
        Stop after this many GEPA iterations in a row that do not raise the best validation
        score (an iteration tries one proposal, or none when the reflection gave nothing
        usable), before ``max_metric_calls`` is spent (``None``: spend the budget).
    metric, n_resamples, seed
        The held-out comparison's agreement metric (pooled over criteria), its resamples, and
        the seed of the splits, GEPA and the bootstrap.
    cache, verbose
        The grading cache (``grade(cache=)``); GEPA's log lines.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "cites", "requirement": "Mentions a source (cues: trust)"}])
    >>> df = pl.DataFrame({"id": range(40), "submission": [f"see ref {i}" if i % 2 else "trust me" for i in range(40)]})
    >>> human = pl.DataFrame({"id": range(40), "criterion": "cites", "label": ["UNMET", "MET"] * 20})
    >>> judge = rt.ScriptedJudge(rule=lambda t, c: "MET" if c.requirement.split("cues: ")[1][:-1] in t else "UNMET")
    >>> fix = lambda prompt: "```Names a source it relies on (cues: ref)```"
    >>> e = rt.evolve_rubric(df, human, rubric, model=judge, reflection_model=fix, max_metric_calls=40,
    ...                      n_resamples=200, cache=False)
    >>> e.rubric["cites"].requirement, round(e.gain, 2)  # held-out kappa from -0.95 to 1.0
    ('Names a source it relies on (cues: ref)', 1.95)
    """
    import gepa  # reason: gepa is the optional [evolve] extra, loaded only when used
    from gepa.utils.stop_condition import NoImprovementStopper  # reason: the same optional extra

    check_resampling(n_resamples=n_resamples, seed=seed)
    frame = to_polars(df, name="df")
    check_settings(rubric, frame, column, id_column, locals())
    h = check_human(human, frame.schema[id_column])
    check_labels(h, rubric, metric)
    what = check_coevolve(coevolve, gate=gate, acceptance=acceptance, reflection_template=reflection_template)
    orphans = h.filter(~pl.col("id").is_in(frame[id_column].implode()))["id"].unique()
    if orphans.len():
        warnings.warn(
            f"{orphans.len()} labelled id(s) are not in df and are left out (e.g. {orphans.head(3).to_list()})",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    train_all, hold, split = holdout_split(
        h, frame, id_column, holdout=holdout, seed=seed, min_hold=2, min_train=4, at_least=8, who="evolve_rubric"
    )
    if len(hold) < FEW_HELD_OUT:
        warnings.warn(
            f"only {len(hold)} submissions are held out: the held-out change and its interval rest on them alone and "
            f"will be wide; label more submissions or raise holdout= (now {holdout})",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    train, val = split_train(sorted(train_all, key=str), validation, seed, minibatch_size, max_metric_calls)
    split = split.with_columns(
        pl.when(pl.col("id").is_in(val)).then(pl.lit("validation")).otherwise(pl.col("split")).alias("split")
    )
    texts = frame.select(pl.col(id_column).alias("id"), pl.col(column).cast(pl.String).alias("text"))
    adapter = RubricAdapter(rubric, texts, h, model, cache=cache, agreement_weight=agreement_weight,
                            discrimination_weight=discrimination_weight, consistency_weight=consistency_weight,
                            runs=consistency_runs)  # fmt: skip
    lm = reflection_lm(reflection_model)
    checks: list[dict[str, Any]] = []  # the gate's checks in this run
    seed_candidate = to_candidate(rubric, weights=evolve_weights)
    stoppers = [] if patience is None else [NoImprovementStopper(patience)]
    search, settings = _search_settings(what, lm, checks, seed_candidate, gate=gate, acceptance=acceptance,
                                        reflection_template=reflection_template)  # fmt: skip
    try:
        result: Any = gepa.optimize(
            trainset=train, valset=val, adapter=adapter, **search,  # type: ignore[arg-type]  # reason: gepa's protocols, met structurally
            reflection_minibatch_size=minibatch_size, max_metric_calls=max_metric_calls, seed=seed,
            display_progress_bar=False, raise_on_exception=True, logger=_Printer(verbose), skip_perfect_score=True,
            stop_callbacks=stoppers,
        )  # fmt: skip
    except ReflectionsFailed as stop:
        raise RuntimeError(f"the reflection model never gave a usable reply, so nothing was evolved: {stop}") from None
    _check_reflections(lm, result)
    if adapter.refused:
        warnings.warn(f"{len(adapter.refused)} proposed candidate(s) were refused and scored 0; the first: "
                      f"{adapter.refused[0]}", RuntimeWarning, stacklevel=user_stacklevel())  # fmt: skip
    log = _gate_log(checks)
    if log.height and not log["passed"].any():
        warnings.warn(f"the gate turned down every proposal ({log.height} checks), so nothing was evaluated; "
                      "lower its min_score or check its model",
                      RuntimeWarning, stacklevel=user_stacklevel())  # fmt: skip
    if log["error"].any():
        first = log.filter(pl.col("error"))["reason"][0]
        warnings.warn(f"{int(log['error'].sum())} gate call(s) failed; those proposals were evaluated ungated; "
                      f"the first: {first}",
                      RuntimeWarning, stacklevel=user_stacklevel())  # fmt: skip
    refused = settings.log_of("refused", "failed") if settings is not None else []
    if refused:
        warnings.warn(f"{len(refused)} new version(s) of the co-evolved settings were unusable or failed and were "
                      f"skipped; the first: {refused[0]}", RuntimeWarning, stacklevel=user_stacklevel())  # fmt: skip
    graded = adapter.n_graded  # in the search; the held-out grading below is not counted
    best = from_candidate(rubric, result.best_candidate)
    hold_ids = sorted(hold, key=str)
    v_before, v_after = adapter.grade(rubric, hold_ids, once=True), adapter.grade(best, hold_ids, once=True)
    pooled, per = holdout_change(
        v_after, v_before, h, rubric, hold_ids, metric=metric, n_resamples=n_resamples, seed=seed
    )
    return RubricEvolution(
        rubric=best, initial=rubric, candidates=_candidates(result, search["seed_candidate"]), holdout=pooled,
        by_criterion=per, split=split, metric_calls=int(result.total_metric_calls or 0),
        cost_usd=float(sum(adapter.spent)) + float(sum(getattr(lm, "spent", []))) + float(log["cost_usd"].sum()),
        gate_log=log, graded=graded, settings=settings.result() if settings is not None else {},
    )  # fmt: skip


def _search_settings(
    what: tuple[str, ...], lm: Any, checks: list[dict[str, Any]], seed_candidate: dict[str, str], *,
    gate: ProposalGate | None, acceptance: Any, reflection_template: Any,
) -> tuple[dict[str, Any], Settings | None]:  # fmt: skip
    """``gepa.optimize``'s seed, proposer and acceptance settings: GEPA's own reflection
    (through the gate), or with ``what`` co-evolved, :mod:`rubrictools.evolution.hooks`' (and
    the :class:`~rubrictools.evolution.coevolution.Settings` they evolve)."""
    templates = templates_for(reflection_template, seed_candidate)
    rule = acceptance_rule(acceptance)
    if not what:
        return {"seed_candidate": seed_candidate, "reflection_prompt_template": templates,
                "reflection_lm": asked_once(lm if gate is None else gated(lm, gate, checks)),
                "acceptance_criterion": rule}, None  # fmt: skip
    settings = Settings(what, components=list(seed_candidate), gate=gate, acceptance=acceptance,
                        reflection_template=reflection_template)  # fmt: skip
    proposer = SettingsProposer(lm, templates=templates, settings=settings, gate=gate, gate_log=checks)
    base = acceptance if isinstance(acceptance, str) else rule
    hooks = {"custom_candidate_proposer": proposer, "acceptance_criterion": SettingsAcceptance(base, settings, lm)}
    return {"seed_candidate": seed_candidate, **hooks}, settings


def _changed_words(changed: list[str]) -> str:
    """``2 criteria changed``, ``1 criterion and the guidelines changed``, ``0 criteria changed``."""
    n = sum(c != "(guidelines)" for c in changed)
    words = f"{n} criteri{'on' if n == 1 else 'a'}" + (" and the guidelines" if "(guidelines)" in changed else "")
    return f"{words} changed"


def _check_reflections(lm: Any, result: Any) -> None:
    """GEPA goes on when a reflection raises: a run where every one failed is an error, not a
    rubric that silently never changed; some failures are a warning."""
    errors: list[BaseException] = getattr(lm, "errors", [])
    if not errors:
        return
    first = f"{type(errors[0]).__name__}: {errors[0]}"
    asked = len(getattr(lm, "calls", errors))
    if len(errors) == asked and len(result.candidates) <= 1:
        raise RuntimeError(f"every reflection failed ({asked}), so nothing was evolved; the first: {first}")
    warnings.warn(f"{len(errors)} of {asked} reflection(s) failed and were skipped; the first: {first}",
                  RuntimeWarning, stacklevel=user_stacklevel())  # fmt: skip


class _Printer:
    """GEPA's logger: its lines printed when ``verbose``, else dropped."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose

    def log(self, message: str) -> None:
        if self.verbose:
            print(message)


def _gate_log(checks: list[dict[str, Any]]) -> pl.DataFrame:
    schema = {
        "attempt": pl.Int64,
        "score": pl.Float64,
        "passed": pl.Boolean,
        "error": pl.Boolean,
        "cost_usd": pl.Float64,
        "reason": pl.String,
    }
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in checks], schema=schema)

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
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rubrictools.diagnostics.disagreements import holdout_change, holdout_split
from rubrictools.evolution.acceptance import acceptance_rule
from rubrictools.evolution.adapter import RubricAdapter
from rubrictools.evolution.coevolution import (
    History,
    SettingsAcceptance,
    SettingsProposer,
    check_coevolve,
    latest_settings,
    rubric_part,
    settings_candidate,
    settings_of,
)
from rubrictools.evolution.components import from_candidate, to_candidate
from rubrictools.evolution.gate import ProposalGate, gated
from rubrictools.evolution.reflection import (
    ReflectionsFailed,
    asked_once,
    check_templates,
    reflection_lm,
    templates_for,
)
from rubrictools.frames import to_polars
from rubrictools.human_agreement import agreement, human_frame
from rubrictools.metrics.resampling import check_resampling
from rubrictools.rubric import Rubric
from rubrictools.stack import user_stacklevel

__all__ = ["RubricEvolution", "evolve_rubric"]


@dataclass
class RubricEvolution:
    """The result of :func:`evolve_rubric`.

    The best ``rubric`` (``initial`` is the start), the
    ``candidates`` GEPA kept (``candidate, parent, validation_score, changed``), the ``holdout``
    comparison (one row: ``value_before, value_after, diff, ci_low, ci_high, p_value``), the
    per-criterion ``by_criterion``, the ``split`` (train / validation / holdout per id), the
    graded submissions GEPA spent (``metric_calls``), the cost of the judge, the reflection
    model and the gate (``cost_usd``) and, with a ``gate``, one row per gate check
    (``gate_log``: ``attempt, score, passed, error, cost_usd, reason``: what the proposal missed, or why the
    check failed); with ``coevolve``, the best candidate's ``settings``: ``gate_rubric``,
    ``reflection_templates`` (by kind) and ``acceptance`` (tolerances), None for those not
    evolved."""

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

    @property
    def gain(self) -> float | None:
        """The held-out change in agreement (after - before)."""
        return self.holdout["diff"][0] if self.holdout.height else None

    def changes(self) -> pl.DataFrame:
        """``criterion, before, after`` for every criterion whose requirement or weight changed."""
        rows = [
            (c.name, f"{c.requirement} (weight {c.weight:g})", f"{n.requirement} (weight {n.weight:g})")
            for c, n in zip(self.initial, self.rubric, strict=True)
            if (c.requirement, c.weight) != (n.requirement, n.weight)
        ]
        return pl.DataFrame(rows, schema=["criterion", "before", "after"], orient="row")

    def __repr__(self) -> str:
        h = self.holdout.row(0, named=True) if self.holdout.height else {}
        ci = "" if not h or h["ci_low"] is None else f" [{h['ci_low']:+.3f}, {h['ci_high']:+.3f}]"
        gain = "" if not h or h["diff"] is None else f"; held-out change {h['diff']:+.3f}{ci}"
        return (
            f"RubricEvolution({self.candidates.height} candidates, {self.metric_calls} graded submissions, "
            f"{self.changes().height} criteria changed{gain})"
        )


def _check(rubric: Rubric, frame: pl.DataFrame, column: str, id_column: str, numbers: dict[str, Any]) -> None:
    """Every setting checked, with the field named, before any call."""
    if not isinstance(rubric, Rubric):
        raise TypeError(f"rubric must be a rubrictools Rubric (rt.Rubric.from_dict(...)), got {type(rubric).__name__}")
    if frame.height == 0:
        raise ValueError("df is empty: there is no submission to grade")
    for name, col in (("column", column), ("id_column", id_column)):
        if col not in frame.columns:
            raise ValueError(f"{name}={col!r} is not a column of df (columns: {frame.columns})")
    nulls = frame.filter(pl.col(column).is_null())[id_column].head(3).to_list()
    if nulls:
        raise ValueError(f"column {column!r} of df has null submissions (ids {nulls}...): drop or fill them first")
    for name in ("holdout", "validation"):
        v = numbers[name]
        if isinstance(v, bool) or not isinstance(v, Real) or not 0.0 < float(v) < 1.0:
            raise ValueError(f"{name} must be a fraction in (0, 1), got {v!r}")
    for name in ("max_metric_calls", "minibatch_size", "seed"):
        v = numbers[name]
        if isinstance(v, bool) or not isinstance(v, Integral) or v < (0 if name == "seed" else 1):
            raise ValueError(f"{name} must be an int >= {0 if name == 'seed' else 1}, got {v!r}")
    for name in ("agreement_weight", "discrimination_weight"):
        v = numbers[name]
        if isinstance(v, bool) or not isinstance(v, Real) or v < 0 or not np.isfinite(float(v)):
            raise ValueError(f"{name} must be a number >= 0, got {v!r}")
    if numbers["agreement_weight"] + numbers["discrimination_weight"] <= 0:
        raise ValueError("agreement_weight and discrimination_weight cannot both be 0")
    for name in ("evolve_weights", "verbose"):
        if not isinstance(numbers[name], bool):
            raise TypeError(f"{name} must be True or False, got {numbers[name]!r}")
    if numbers["evolve_weights"] and numbers["discrimination_weight"] == 0:
        raise ValueError(
            "evolve_weights=True needs discrimination_weight > 0: agreement is measured per criterion, so weights "
            "never change it and no weight change could be kept"
        )
    if numbers["discrimination_weight"] > 0 and numbers["minibatch_size"] < 2:
        raise ValueError(
            "discrimination_weight > 0 needs minibatch_size >= 2: discrimination is the spread of a minibatch's "
            "scores, always 0 for one submission (about 10 or more make it meaningful)"
        )
    components = to_candidate(rubric, weights=numbers["evolve_weights"])
    check_templates(numbers["reflection_template"], components)
    acceptance_rule(numbers["acceptance"])
    if isinstance(numbers["acceptance"], Mapping) and numbers["discrimination_weight"] == 0:
        raise ValueError(
            "acceptance= tolerances need discrimination_weight > 0: with it at 0 discrimination is never measured, so "
            "a mapping of tolerances is the same as acceptance='improvement'"
        )
    gate = numbers["gate"]
    if gate is not None and not isinstance(gate, ProposalGate):
        raise TypeError(f"gate must be a rubrictools.evolution.ProposalGate or None, got {type(gate).__name__}")
    if gate is not None:
        gate.validate()  # a field changed after the gate was built is checked too
    patience = numbers["patience"]
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, Integral) or patience < 1):
        raise ValueError(f"patience must be an int >= 1 or None, got {patience!r}")
    cache = numbers["cache"]
    if not isinstance(cache, (bool, str, Path)):
        raise TypeError(f"cache must be True, False or a file path, got {type(cache).__name__}")


_FEW_HELD_OUT = 10
"""Fewer held-out submissions than this draw a warning: the final comparison rests on them."""

_CHANCE_CORRECTED = ("cohen_kappa", "kappa_linear", "kappa_quadratic", "gwet_ac1", "mcc")


def _check_labels(h: pl.DataFrame, rubric: Rubric, metric: str) -> None:
    """The human labels and ``metric`` as the final comparison will read them, checked before
    any call: criteria of the rubric, labels its criteria allow, a metric that exists."""
    unknown = sorted(set(h["criterion"].unique().to_list()) - set(rubric.names))
    if unknown:
        raise ValueError(f"human labels name criteria not in the rubric: {unknown} (rubric: {list(rubric.names)})")
    judged = {c.name or "" for c in rubric if c.rule is None}
    if not judged & set(h["criterion"].to_list()):
        raise ValueError(f"no human label for any judge-decided criterion of the rubric ({sorted(judged)})")
    first = h.unique(["id", "criterion"], keep="first", maintain_order=True).select(
        "id", "criterion", pl.col("label").cast(pl.String).alias("verdict")
    )
    agreement(first, h, rubric, metrics=[metric], level="criterion", n_resamples=0)  # raises naming the problem
    constant = sorted(
        c for c, n in h.group_by("criterion").agg(pl.col("label").cast(pl.String).n_unique()).iter_rows() if n < 2
    )
    if constant and metric in _CHANCE_CORRECTED:
        warnings.warn(
            f"the human labels of {constant} are all one label: {metric} (chance-corrected) is 0 or undefined for "
            "any judge there, so it cannot show a change; metric='accuracy' can",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _split(order: list[Any], validation: float, seed: int, minibatch_size: int, budget: int) -> tuple[list, list]:
    """GEPA's training and validation ids; a minibatch or a budget too small for them is refused."""
    perm = np.random.default_rng(seed + 1).permutation(len(order))
    n_val = min(max(2, round(validation * len(order))), len(order) - 2)
    val = [order[i] for i in sorted(perm[:n_val])]
    train = [i for i in order if i not in set(val)]
    if minibatch_size > len(train):
        raise ValueError(
            f"minibatch_size={minibatch_size} is more than the {len(train)} training submissions left after "
            "holdout= and validation= took their shares: lower one of the three"
        )
    least = len(val) + 2 * minibatch_size
    if budget < least:
        raise ValueError(
            f"max_metric_calls={budget} cannot evolve anything: grading the {len(val)} validation submissions and "
            f"one mutation's minibatch twice takes {least}"
        )
    return train, val


def _human(human: Any, id_type: pl.DataType) -> pl.DataFrame:
    h = human_frame(human)
    try:
        return h.with_columns(pl.col("id").cast(id_type))
    except pl.exceptions.InvalidOperationError:
        raise ValueError(
            f"human label ids ({h.schema['id']}, e.g. {h['id'][0]!r}) cannot be matched to df's ids ({id_type})"
        ) from None


def _candidates(result: Any, initial: dict[str, str]) -> pl.DataFrame:
    rows = []
    for i, (cand, parents, val) in enumerate(
        zip(result.candidates, result.parents, result.val_aggregate_scores, strict=True)
    ):
        changed = sorted(k for k, v in cand.items() if v != initial.get(k))
        parent = next((p for p in parents if p is not None), None)
        rows.append({"candidate": i, "parent": parent, "validation_score": float(val), "changed": changed})
    schema: dict[str, pl.DataType] = {
        "candidate": pl.Int64(), "parent": pl.Int64(), "validation_score": pl.Float64(), "changed": pl.List(pl.String)
    }  # fmt: skip
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
        GEPA's budget: submissions graded during the search (a submission graded with a
        candidate counts once, whatever the number of criteria). GEPA checks it once per
        iteration, so a run can go over by up to one validation pass and two minibatches;
        reflection and gate calls are not counted in it.
    holdout, validation
        Share of the labelled submissions held out for the final comparison; share of the rest
        used as GEPA's validation set (the others are its training set).
    minibatch_size
        Training submissions shown to the reflection model per mutation.
    agreement_weight, discrimination_weight
        Each submission's score: ``(w_a * agreement + w_d * discrimination) / (w_a + w_d)``,
        agreement ``1 - mean |judge value - human value|``, discrimination the normalised
        entropy of the batch's rubric scores (rubrify's meta-metrics; keep ``w_d = 0`` with
        fewer than about 10 submissions per batch).
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
        Settings that evolve with the rubric, in the same GEPA run (rubrify's co-evolution,
        ``evolve_rubric_v3``): any of ``"gate"`` (the gate rubric's requirements; needs
        ``gate``), ``"templates"`` (the reflection prompt of each kind) and ``"acceptance"``
        (the tolerances; needs ``acceptance`` tolerances). A setting's mutation is kept when no
        objective falls; the reflection model rewrites it from what it did in the run. The best
        candidate's settings are in ``RubricEvolution.settings``; see
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
    _check(rubric, frame, column, id_column, locals())
    h = _human(human, frame.schema[id_column])
    _check_labels(h, rubric, metric)
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
    if len(hold) < _FEW_HELD_OUT:
        warnings.warn(
            f"only {len(hold)} submissions are held out: the held-out change and its interval rest on them alone and "
            f"will be wide; label more submissions or raise holdout= (now {holdout})",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    train, val = _split(sorted(train_all, key=str), validation, seed, minibatch_size, max_metric_calls)
    split = split.with_columns(
        pl.when(pl.col("id").is_in(val)).then(pl.lit("validation")).otherwise(pl.col("split")).alias("split")
    )
    texts = frame.select(pl.col(id_column).alias("id"), pl.col(column).cast(pl.String).alias("text"))
    adapter = RubricAdapter(rubric, texts, h, model, cache=cache, agreement_weight=agreement_weight,
                            discrimination_weight=discrimination_weight)  # fmt: skip
    lm = reflection_lm(reflection_model)
    checks: list[dict[str, Any]] = []  # the gate's checks in this run
    seed_candidate = to_candidate(rubric, weights=evolve_weights)
    stoppers = [] if patience is None else [NoImprovementStopper(patience)]
    search = _search_settings(what, lm, checks, seed_candidate, adapter, gate=gate, acceptance=acceptance,
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
    if search.get("custom_candidate_proposer") is not None and search["custom_candidate_proposer"].history.refused:
        refused = search["custom_candidate_proposer"].history.refused
        warnings.warn(f"{len(refused)} proposed setting(s) were unusable and skipped; the first: {refused[0]}",
                      RuntimeWarning, stacklevel=user_stacklevel())  # fmt: skip
    best = from_candidate(rubric, rubric_part(result.best_candidate))
    hold_ids = sorted(hold, key=str)
    v_before, v_after = adapter.grade(rubric, hold_ids), adapter.grade(best, hold_ids)
    pooled, per = holdout_change(
        v_after, v_before, h, rubric, hold_ids, metric=metric, n_resamples=n_resamples, seed=seed
    )
    return RubricEvolution(
        rubric=best, initial=rubric, candidates=_candidates(result, search["seed_candidate"]), holdout=pooled,
        by_criterion=per, split=split, metric_calls=int(result.total_metric_calls or 0),
        cost_usd=float(sum(adapter.spent)) + float(sum(getattr(lm, "spent", []))) + float(log["cost_usd"].sum()),
        gate_log=log, settings=settings_of(latest_settings(result.candidates, result.best_candidate), gate)
        if what else {},
    )  # fmt: skip


def _search_settings(
    what: tuple[str, ...], lm: Any, checks: list[dict[str, Any]], seed_candidate: dict[str, str],
    adapter: RubricAdapter, *, gate: ProposalGate | None, acceptance: Any, reflection_template: Any,
) -> dict[str, Any]:  # fmt: skip
    """``gepa.optimize``'s seed, proposer and acceptance settings: GEPA's own reflection
    (through the gate), or with ``what`` co-evolved, :mod:`rubrictools.evolution.coevolution`'s."""
    templates = templates_for(reflection_template, seed_candidate)
    if not what:
        return {"seed_candidate": seed_candidate, "reflection_prompt_template": templates,
                "reflection_lm": asked_once(lm if gate is None else gated(lm, gate, checks)),
                "acceptance_criterion": acceptance_rule(acceptance)}  # fmt: skip
    history = History()
    adapter.settings = history.records
    extra = settings_candidate(what, components=list(seed_candidate), gate=gate, acceptance=acceptance,
                               reflection_template=reflection_template)  # fmt: skip
    rule = acceptance_rule(acceptance)
    return {
        "seed_candidate": {**seed_candidate, **extra},
        "custom_candidate_proposer": SettingsProposer(
            lm, templates=templates, gate=gate, history=history, gate_log=checks
        ),
        "acceptance_criterion": SettingsAcceptance(acceptance if isinstance(acceptance, str) else rule, history),
    }


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

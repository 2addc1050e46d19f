"""Ensemble aggregation of per-judge verdict rows into one row per (submission, criterion).

Methods (errored votes never vote; a group whose every vote errored stays an error):

* ``majority``: the label with most votes; ``weighted``: most judge weight.
  Ties go to a real verdict over CANNOT_ASSESS/NA, then to the score-minimising label
  (lower ``value`` for rewards, higher for penalties): disagreement never inflates a score.
* ``any``: the highest-valued label voted (binary: MET if any judge says MET).
* ``unanimous``: the common label when all judges agree, else the lowest-valued label voted
  (binary: MET only if every judge says MET).
* ``mean`` (ordinal): the label whose value is nearest the mean vote value (ties to the
  score-minimising one); ``weighted_mean``: the same about the judge-weighted mean
  ``sum_j w_j v_j / sum_j w_j`` (autorubric's name). ``median``: the median vote value; with an
  even count the score-minimising of the two middle values. The explanation states the exact
  centre (``mean 0.667``).

:class:`VoteRules` chooses between rubrictools' defaults and autorubric's behaviour:

* ``abstentions="vote"`` (default): CANNOT_ASSESS/NA votes are votes (``[MET, CA, CA]`` ->
  CANNOT_ASSESS under majority). ``"drop"``: they are dropped before counting, as autorubric
  does (``[MET, CA, CA]`` -> MET); only when every vote abstains is the result an abstention.
* ``unanimous="lowest"`` (default): on disagreement the lowest-valued label voted.
  ``"abstain"``: on a nominal criterion, disagreement gives the criterion's NA label (its NA
  option, else CANNOT_ASSESS), as autorubric's nominal ``unanimous`` does; binary and ordinal
  criteria keep the lowest label (autorubric's binary ``unanimous`` and ordinal ``min``).
* ``snap="voted"`` (default): ``mean``/``weighted_mean``/``median`` pick among the labels some
  judge voted. ``"option"``: among all the criterion's options (autorubric), so the votes
  ``[0, 1]`` on a 0 / 0.5 / 1 scale give 0.5's label, which no judge voted; the median of an
  even count is then the midpoint of the two middle votes. Numeric-range criteria keep
  ``"voted"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

import polars as pl

from rubrictools.rubric.labels import CANNOT_ASSESS

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.rubric import Rubric

__all__ = ["AGGREGATIONS", "Abstentions", "Snap", "Unanimous", "VoteRules", "aggregate_votes", "option_frame"]

Abstentions = Literal["vote", "drop"]
Unanimous = Literal["lowest", "abstain"]
Snap = Literal["voted", "option"]

AGGREGATIONS = ("majority", "weighted", "any", "unanimous", "mean", "weighted_mean", "median")
KEYS = ["__row", "criterion"]
OPTION_SCHEMA = {
    "criterion": pl.String,
    "verdict": pl.String,
    "rank": pl.Int64,
    "opt_value": pl.Float64,
    "nominal": pl.Boolean,
}


@dataclass(frozen=True)
class VoteRules:
    """How abstentions, unanimous disagreement and mean snapping are treated (module docstring).

    >>> VoteRules(abstentions="drop", unanimous="abstain", snap="option")
    VoteRules(abstentions='drop', unanimous='abstain', snap='option')
    """

    abstentions: Abstentions = "vote"
    unanimous: Unanimous = "lowest"
    snap: Snap = "voted"

    def __post_init__(self) -> None:
        for name, kind in (("abstentions", Abstentions), ("unanimous", Unanimous), ("snap", Snap)):
            allowed = get_args(kind)
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")


def option_frame(rubrics: Iterable[Rubric]) -> pl.DataFrame:
    """Every label of every enumerated criterion: ``criterion, verdict, rank`` (its position),
    ``opt_value`` (null for CANNOT_ASSESS/NA) and ``nominal``. Binary criteria list MET, UNMET,
    CANNOT_ASSESS; numeric-range criteria are left out."""
    rows: list[tuple[str, str, int, float | None, bool]] = []
    for r in rubrics:
        for c in r:
            if c.range is not None:
                continue
            rows.extend(
                (c.name or "", lab, i, c.value_of(lab), c.kind == "nominal") for i, lab in enumerate(c.answer_labels)
            )
    return pl.DataFrame(rows, schema=OPTION_SCHEMA, orient="row").unique(["criterion", "verdict"], keep="first")


def _pick(cand: pl.DataFrame, by: list[str], descending: list[bool]) -> pl.DataFrame:
    return cand.sort([*KEYS, *by], descending=[False, False, *descending]).group_by(KEYS, maintain_order=True).first()


def _candidates(ok: pl.DataFrame, options: pl.DataFrame) -> pl.DataFrame:
    """One row per (key, voted label): vote count, judge weight and the sort keys."""
    sign = pl.when(pl.col("weight") < 0).then(-1.0).otherwise(1.0)
    return (
        ok.group_by([*KEYS, "verdict"], maintain_order=True)
        .agg(
            pl.len().alias("n"),
            pl.col("judge_weight").sum().alias("wsum"),
            pl.col("value").first(),
            pl.col("weight").first(),
        )
        .with_columns(
            pl.col("value").is_null().alias("is_na"),
            (pl.col("value").fill_null(0.0) * sign).alias("score_key"),
            pl.col("value").fill_null(-1.0).alias("val_key"),
        )
        .join(options.select("criterion", "verdict", "rank"), on=["criterion", "verdict"], how="left")
        .with_columns(pl.col("rank").fill_null(1 << 30))
    )


def _centred(
    ok: pl.DataFrame, cand: pl.DataFrame, options: pl.DataFrame, methods: set[str], snap: str
) -> dict[str, pl.DataFrame]:
    """``mean``/``weighted_mean``/``median`` picks, with the centre each one aimed at."""
    real = ok.filter(pl.col("value").is_not_null())
    stats = real.group_by(KEYS).agg(
        pl.col("value").mean().alias("mean"),
        ((pl.col("value") * pl.col("judge_weight")).sum() / pl.col("judge_weight").sum()).alias("weighted_mean"),
        pl.col("value").quantile(0.5, "lower").alias("lo"),
        pl.col("value").quantile(0.5, "higher").alias("hi"),
        pl.col("weight").first().alias("w"),
    )
    # a voted median is a middle vote (the score-minimising one of an even count); snapping to
    # any option aims at the midpoint of the two middle votes, as autorubric does
    voted_middle = pl.when(pl.col("w") < 0).then(pl.col("hi")).otherwise(pl.col("lo"))
    middle = (pl.col("lo") + pl.col("hi")) / 2 if snap == "option" else voted_middle
    stats = stats.with_columns(middle.alias("median"))
    sign = pl.when(pl.col("w") < 0).then(-1.0).otherwise(1.0)
    voted = cand.filter(~pl.col("is_na")).join(stats, on=KEYS)
    if snap == "option":
        # every scored option of the criterion; keys without an option list (numeric) keep the voted labels
        every = stats.join(
            options.filter(pl.col("opt_value").is_not_null()).rename({"opt_value": "value"}), on="criterion"
        ).with_columns((pl.col("value") * sign).alias("score_key"))
        pool = pl.concat([every, voted.join(every.select(KEYS).unique(), on=KEYS, how="anti")], how="diagonal")
    else:
        pool = voted
    out = {}
    for method in methods & {"mean", "weighted_mean", "median"}:
        # rounded: distances equal on paper must tie (then the score-minimising label wins, then rank)
        dist = (pl.col("value") - pl.col(method)).abs().round(9)
        best = _pick(pool.with_columns(dist.alias("dist")), ["dist", "score_key", "rank"], [False, False, False])
        out[method] = best.with_columns(pl.col(method).alias("centre"))
    return out


def _abstain_labels(options: pl.DataFrame) -> pl.DataFrame:
    """The NA label of each criterion: its first NA option, else CANNOT_ASSESS."""
    return (
        options.filter(pl.col("opt_value").is_null())
        .sort("rank")
        .group_by("criterion", maintain_order=True)
        .first()
        .select("criterion", pl.col("verdict").alias("na_label"))
    )


def aggregate_votes(
    votes: pl.DataFrame,
    method_by_criterion: dict[str, str],
    default: str,
    options: pl.DataFrame | None = None,
    rules: VoteRules | None = None,
) -> pl.DataFrame:
    """Aggregate ``votes`` (columns ``__row, id, criterion, verdict, value, weight, error,
    judge_weight, judge``) into one row per ``(__row, criterion)`` with ``judge="ensemble"``.
    Labels of equal value are told apart by their option position in ``options``
    (:func:`option_frame`; the lowest first, as autorubric), then by name: the result never
    depends on the judges' order."""
    rules = rules or VoteRules()
    methods = {default, *method_by_criterion.values()}
    for method in methods:
        if method not in AGGREGATIONS:
            raise ValueError(f"aggregate must be one of {AGGREGATIONS}, got {method!r}")
    options = options if options is not None else pl.DataFrame(schema=OPTION_SCHEMA)
    ok = votes.filter(pl.col("error").is_null())
    if rules.abstentions == "drop":  # abstentions count only where every vote abstained
        real = pl.col("value").is_not_null()
        ok = ok.filter(real | ~real.any().over(KEYS))
    cand = _candidates(ok, options)
    results: dict[str, pl.DataFrame] = {
        "majority": _pick(cand, ["n", "is_na", "score_key", "rank"], [True, False, False, False])
    }
    if "weighted" in methods:
        results["weighted"] = _pick(cand, ["wsum", "is_na", "score_key", "rank"], [True, False, False, False])
    if "any" in methods:
        results["any"] = _pick(cand, ["is_na", "val_key", "rank", "verdict"], [False, True, False, False])
    if "unanimous" in methods:
        lowest = _pick(cand, ["is_na", "val_key", "rank", "verdict"], [False, False, False, False])
        if rules.unanimous == "abstain":
            nominal = options.filter("nominal").select("criterion").unique()
            split = (
                cand.join(nominal, on="criterion")
                .group_by(KEYS)
                .agg(pl.len().alias("n_labels"))
                .filter(pl.col("n_labels") > 1)
            )
            na = split.join(_abstain_labels(options), on="criterion", how="left").select(
                *KEYS,
                pl.col("na_label").fill_null(CANNOT_ASSESS).alias("verdict"),
                pl.lit(None, pl.Float64).alias("value"),
            )
            lowest = pl.concat([na, lowest.select(na.columns).join(na, on=KEYS, how="anti")])
        results["unanimous"] = lowest
    fallback = results["majority"]
    for method, best in _centred(ok, cand, options, methods, rules.snap).items():
        cols = [*KEYS, "verdict", "value", "centre"]
        results[method] = pl.concat(
            [best.select(cols), fallback.join(best, on=KEYS, how="anti").select(*KEYS, "verdict", "value")],
            how="diagonal",
        )
    return _assemble(votes, cand, results, method_by_criterion, default)


def _assemble(
    votes: pl.DataFrame,
    cand: pl.DataFrame,
    results: dict[str, pl.DataFrame],
    method_by_criterion: dict[str, str],
    default: str,
) -> pl.DataFrame:
    """The ensemble rows: each key's method's pick, summed usage, a tally in the explanation."""
    by_weight = pl.col("method").is_in(["weighted", "weighted_mean"])
    tally = (
        cand.sort([*KEYS, "rank", "verdict"])
        .group_by(KEYS, maintain_order=True)
        .agg(
            pl.format("{} x{}", pl.col("verdict"), pl.col("n"))
            .sort_by("n", descending=True, maintain_order=True)
            .str.join(", ")
            .alias("tally"),
            pl.struct(pl.col("verdict").alias("label"), (pl.col("n") / pl.col("n").sum()).alias("prob")).alias(
                "__by_n"
            ),
            pl.struct(pl.col("verdict").alias("label"), (pl.col("wsum") / pl.col("wsum").sum()).alias("prob")).alias(
                "__by_w"
            ),
        )
    )
    crit_method = pl.col("criterion").replace_strict(method_by_criterion, default=default, return_dtype=pl.String)
    groups = (
        votes.group_by(KEYS, maintain_order=True)
        .agg(
            pl.col("id").first(),
            pl.col("weight").first(),
            pl.len().alias("n_votes"),
            pl.col("error").drop_nulls().str.join(" | ").alias("all_errors"),
            pl.col("error").is_null().sum().alias("n_ok"),
            pl.col("prompt_tokens").sum(),
            pl.col("completion_tokens").sum(),
            pl.col("cost_usd").sum(),
            pl.col("cached").all(),
            pl.col("attempts").sum(),
            pl.col("latency_s").max(),
        )
        .with_columns(crit_method.alias("method"))
    )
    picked = pl.concat(
        [
            df.select(
                *KEYS,
                "verdict",
                "value",
                pl.col("centre") if "centre" in df.columns else pl.lit(None, pl.Float64).alias("centre"),
            ).with_columns(pl.lit(name).alias("method"))
            for name, df in results.items()
        ]
    )
    centre = (
        pl.when(pl.col("centre").is_not_null())
        .then(pl.format(" ({} {})", pl.col("method"), pl.col("centre").round(3)))
        .otherwise(pl.lit(""))
    )
    out = (
        groups.join(picked, on=[*KEYS, "method"], how="left", maintain_order="left")
        .join(tally, on=KEYS, how="left", maintain_order="left")
        .with_columns(
            pl.when(pl.col("n_ok") == 0)
            .then(pl.format("all {} judges failed: {}", pl.col("n_votes"), pl.col("all_errors")))
            .otherwise(None)
            .alias("error"),
            pl.format("{} of {} judges{}: {}", pl.col("method"), pl.col("n_votes"), centre, pl.col("tally")).alias(
                "explanation"
            ),
            # the votes' shares (by judge weight for the weighted methods): rt.score(value="expected")
            # then scores the exact mean vote, not the label it snapped to
            pl.when(by_weight).then("__by_w").otherwise("__by_n").alias("distribution"),
            pl.lit("votes").alias("distribution_source"),
            pl.lit("ensemble").alias("judge"),
        )
        .with_columns(
            pl.when(pl.col("error").is_null()).then(pl.col("verdict")).otherwise(None).alias("verdict"),
            pl.when(pl.col("error").is_null()).then(pl.col("value")).otherwise(None).alias("value"),
        )
    )
    return out.drop("n_votes", "all_errors", "n_ok", "method", "tally", "centre", "__by_n", "__by_w")

"""Every setting of a grading run, declared once with its default and validated before any call.

:func:`rubrictools.grade`, :func:`~rubrictools.agrade`, :func:`~rubrictools.submit_batch`,
streaming and Ray all build one :class:`GradeOptions`; their signatures list the same
keyword-only parameters with the same defaults (a test keeps them in step).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from rubrictools.conversations import CONVERSATION_PARTS, ConversationPart
from rubrictools.deprecation import REMOVED_IN, warn_deprecated
from rubrictools.grading.budget import Budget
from rubrictools.grading.votes import AGGREGATIONS
from rubrictools.judge import ResponseCache
from rubrictools.judge.config import LEGACY_FORMATS, Judge
from rubrictools.rubric.constraints import OutputConstraint, parse_constraints

__all__ = [
    "JUDGE_SETTINGS",
    "PAIR_OPTIONS",
    "SINGLE_OPTIONS",
    "CacheSetting",
    "CriterionContext",
    "GradeOptions",
    "GradePart",
    "Inconsistent",
    "Mode",
    "OnNull",
    "OnUnsupported",
    "moved_judge_settings",
]

Mode = Literal["per_criterion", "per_item", "grouped", "holistic"]
CriterionContext = Literal["focused", "full"]
GradePart = Literal["output", "thinking", "all"]
OnUnsupported = Literal["flag", "downgrade"]
Inconsistent = Literal["tie", "first", "error"]
OnNull = Literal["raise", "error_row"]
CacheSetting = bool | str | Path | ResponseCache | None
"""What ``cache=`` accepts: True (the default cache file), a path, an open cache, or False/None."""

JUDGE_SETTINGS = (
    "api_base",
    "api_key",
    "temperature",
    "max_tokens",
    "timeout",
    "max_concurrency",
    "max_retries",
    "backoff_base",
    "backoff_max",
    "response_format",
    "structured_output",
    "system_prompt",
    "litellm_kwargs",
    "transport",
)
"""The judge's transport settings: they live on :class:`~rubrictools.Judge`. The grading entry
points took them as keywords until 0.3; :func:`moved_judge_settings` still reads them, with a
warning, for one release."""

PAIR_OPTIONS = ("pair_column", "systems", "swap", "inconsistent", "ties")
"""Options of pairwise runs only (:func:`rubrictools.grade_pairs`); ``pair_column`` set makes a run pairwise."""

SINGLE_OPTIONS = (
    "aggregate",
    "examples",
    "max_examples",
    "shuffle_options",
    "seed",
    "distribution",
    "distribution_samples",
    "evidence",
    "criterion_context",
    "confidence",
    "output_constraints",
    "on_unsupported",
    "image_column",
)
"""Options of single-submission runs only (:func:`rubrictools.grade`; pairwise grading shows no
images yet)."""

_PARTS = ("output", "thinking", "all")


@dataclass(frozen=True, kw_only=True)
class GradeOptions:
    """The settings of one grading run (see :func:`rubrictools.grade` for each one's meaning)."""

    model: Any = None
    column: str = "submission"
    id_column: str | None = None
    query_column: str | None = None
    reference_column: str | None = None
    rubric_column: str | None = None
    image_column: str | None = None
    mode: Mode = "per_criterion"
    aggregate: str = "majority"
    examples: Any = None
    max_examples: int = 3
    shuffle_options: bool = False
    seed: int = 0
    grade_part: GradePart = "output"
    thinking_markers: bool = False
    conversation_part: ConversationPart = "last_assistant"
    cache: CacheSetting = True
    max_cost_usd: float | Budget | None = None
    progress: bool = True
    distribution: bool = False
    distribution_samples: int = 10
    evidence: bool | None = None
    criterion_context: CriterionContext = "focused"
    confidence: bool = False
    output_constraints: Sequence[OutputConstraint] = ()
    on_unsupported: OnUnsupported = "flag"
    on_null: OnNull = "raise"
    pair_column: str | None = None
    systems: tuple[str, str] | None = None
    swap: bool = True
    inconsistent: Inconsistent = "tie"
    ties: bool = True

    @property
    def pairwise(self) -> bool:
        """A pairwise run (:func:`rubrictools.grade_pairs`): ``column`` holds A, ``pair_column`` B."""
        return self.pair_column is not None

    def input_columns(self) -> list[str]:
        """The columns of the input frame a run reads (in a stable order, without duplicates)."""
        cols = [self.column, self.pair_column, *(self.systems or ())]
        cols += [self.id_column, self.query_column, self.reference_column, self.rubric_column, self.image_column]
        return list(dict.fromkeys(c for c in cols if c is not None))

    def _check_types(self) -> None:
        """Switches are bools and the seed an int: ``confidence=0.9`` or ``seed="x"`` is refused
        rather than read as true or ignored."""
        for name in ("shuffle_options", "thinking_markers", "distribution", "confidence", "progress", "swap", "ties"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.evidence is not None and not isinstance(self.evidence, bool):
            raise TypeError(f"evidence must be True, False or None, got {self.evidence!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"seed must be an int (it orders shuffled options), got {self.seed!r}")

    def _check_pairs(self) -> None:
        _choice("inconsistent", self.inconsistent, ("tie", "first", "error"))
        if not self.pairwise:
            return
        if self.pair_column == self.column:
            raise ValueError(f"a and b are both {self.column!r}: a pair needs two different answer columns")
        if self.systems is not None:
            object.__setattr__(self, "systems", tuple(self.systems))  # a JSON round trip (batch handles) makes a list
            if len(self.systems) != 2 or not all(isinstance(x, str) for x in self.systems):
                raise TypeError(f"systems must be two column names (system of a, system of b), got {self.systems!r}")
            if self.systems[0] == self.systems[1]:
                raise ValueError(f"systems names one column twice ({self.systems[0]!r}); give A's and B's columns")
        for name, bad in (
            ("distribution", self.distribution),
            ("evidence", bool(self.evidence)),
            ("shuffle_options", self.shuffle_options),
            ("examples", self.examples is not None),
            ("criterion_context='full'", self.criterion_context == "full"),
            ("confidence", self.confidence),
            ("output_constraints", bool(self.output_constraints)),
        ):
            if bad:
                raise ValueError(f"{name}= is a setting of single grading (rt.grade); pairwise grading has no {name}")

    def __post_init__(self) -> None:
        self._check_types()
        self._check_pairs()
        _choice("grade_part", self.grade_part, _PARTS)
        _choice("conversation_part", self.conversation_part, CONVERSATION_PARTS)
        _choice("on_unsupported", self.on_unsupported, ("flag", "downgrade"))
        _choice("criterion_context", self.criterion_context, ("focused", "full"))
        object.__setattr__(self, "output_constraints", parse_constraints(self.output_constraints, "output_constraints"))
        if self.confidence and self.mode == "holistic" and not self.pairwise:
            raise ValueError("confidence=True asks for a confidence per verdict; mode='holistic' gives one score")
        _choice("on_null", self.on_null, ("raise", "error_row"))
        _choice("aggregate", self.aggregate, AGGREGATIONS)
        if not isinstance(self.column, str):
            raise TypeError(f"column must be a column name (str), got {type(self.column).__name__}")
        if self.max_examples < 0:
            raise ValueError(f"max_examples must be >= 0, got {self.max_examples}")
        if self.distribution_samples < 0:
            raise ValueError(f"distribution_samples must be >= 0, got {self.distribution_samples}")
        if self.distribution and self.mode != "per_criterion":
            raise ValueError("distribution=True needs mode='per_criterion' (one answer per criterion)")
        if self.max_cost_usd is not None and not isinstance(self.max_cost_usd, Budget) and not self.max_cost_usd >= 0:
            raise ValueError(f"max_cost_usd must be >= 0, got {self.max_cost_usd!r}")

    @classmethod
    def pick(cls, values: dict[str, Any]) -> GradeOptions:
        """The options among ``values`` (e.g. a function's ``locals()``); other keys are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    def replace(self, **changes: Any) -> GradeOptions:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return GradeOptions(**values)

    def settings(self) -> dict[str, Any]:
        """The options that decide what is asked (recorded in batch handles and manifests)."""
        keep = (
            "column",
            "id_column",
            "query_column",
            "reference_column",
            "rubric_column",
            "image_column",
            "mode",
            "aggregate",
            "max_examples",
            "shuffle_options",
            "seed",
            "grade_part",
            "thinking_markers",
            "conversation_part",
            "distribution",
            "evidence",
            "criterion_context",
            "confidence",
            "on_unsupported",
            "on_null",
            *PAIR_OPTIONS,
        )
        out = {k: getattr(self, k) for k in keep}
        if self.output_constraints:  # JSON-ready: batch handles and run records keep them
            out["output_constraints"] = [c.model_dump(exclude_defaults=True) for c in self.output_constraints]
        return out


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")


def moved_judge_settings(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """An :data:`~rubrictools.deprecation.Adapter`: judge settings passed to a grading entry point
    (``grade(model="openai/x", temperature=0.2)``) become ``model=Judge(model="openai/x",
    temperature=0.2)``, with a warning. With a judge object, or the scripted judge, they are
    refused (they were never applied to one)."""
    moved = {k: kwargs.pop(k) for k in JUDGE_SETTINGS if k in kwargs}
    moved = {k: v for k, v in moved.items() if v is not None}
    if "response_format" in moved:  # its own deprecated spelling: read as structured_output
        legacy = moved.pop("response_format")
        moved.setdefault("structured_output", LEGACY_FORMATS.get(legacy, legacy))
    model = kwargs.get("model")
    if not moved or model is None:
        return args, kwargs  # none given, or the entry point says model= is needed
    items = list(model) if isinstance(model, (list, tuple)) else [model]
    keys = ", ".join(f"{k}=" for k in moved)
    objects = [type(m).__name__ for m in items if not isinstance(m, str)]
    if objects:
        raise ValueError(f"{keys} are a judge's settings: set them on the rt.Judge(...) itself ({name}(model=) "
                         f"holds {', '.join(objects)}; a scripted or custom judge has none)")  # fmt: skip
    judges = [Judge(model=m, **moved) for m in items]  # every judge's settings checked alike, the scripted one's too
    if "rubrictools/scripted" in items:
        raise ValueError(f"{keys}: the scripted judge answers without a model, so these settings do not apply to it")
    new = ", ".join(f"{k}=..." for k in moved)
    warn_deprecated(
        f"{name}({keys}) is deprecated and will be removed in {REMOVED_IN}: these are the judge's settings; "
        f"pass model=rt.Judge(model=..., {new})"
    )
    kwargs["model"] = judges if isinstance(model, (list, tuple)) else judges[0]
    return args, kwargs

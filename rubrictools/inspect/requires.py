"""Inspect AI is an optional dependency (the ``[inspect]`` extra): one place checks it is there."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from inspect_ai.scorer import Scorer

__all__ = ["require_inspect"]

INSTALL = "pip install 'rubrictools[inspect]'"


def require_inspect(what: str) -> Callable[..., Scorer]:
    """A maker of registered Inspect scorers, or an error saying how to install Inspect AI.

    The maker wraps an ``async (state, target) -> Score`` function as a scorer called ``name``
    with ``mean`` and ``stderr`` metrics; its other keyword arguments are the settings Inspect
    records for the scorer in the log.
    """
    try:
        from inspect_ai.scorer import mean, scorer, stderr
    except ImportError:
        raise ModuleNotFoundError(f"{what} needs Inspect AI, which is not installed: {INSTALL}") from None

    def make(fn: Callable[..., Any], *, name: str, rubric: Any, settings: dict[str, Any]) -> Scorer:
        @scorer(metrics=[mean(), stderr()], name=name)
        def rubric_scorer(rubric: Any, settings: dict[str, Any]) -> Scorer:
            return fn

        return rubric_scorer(rubric=rubric, settings=settings)

    return make


def inspect_log_module(what: str) -> Any:
    """``inspect_ai.log``, or an error saying how to install Inspect AI."""
    try:
        import inspect_ai.log as log
    except ImportError:
        raise ModuleNotFoundError(f"{what} needs Inspect AI, which is not installed: {INSTALL}") from None
    return log

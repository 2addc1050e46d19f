"""Old parameter names keep working for one release, with a warning that names the new one.

A public function whose parameter was renamed (``bootstrap=`` -> ``n_resamples=``), whose
positional order changed (data first, rubric after) or whose settings moved (the judge's
transport settings now live on :class:`rubrictools.Judge`) is decorated with :func:`adapted`.
The decorator rewrites an old-style call into the new one and warns with
:class:`RubricToolsDeprecationWarning` (a :class:`FutureWarning`, so notebooks and scripts show
it by default). ``inspect.signature`` and the docstring are those of the new function, and the
wrapper lives in the decorated function's module, so its doctest is collected there.

>>> import warnings
>>> @adapted(renamed(bootstrap="n_resamples"))
... def mean_ci(x: list[float], *, n_resamples: int = 1000) -> int:
...     return n_resamples
>>> with warnings.catch_warnings(record=True) as w:
...     warnings.simplefilter("always")
...     mean_ci([1.0], bootstrap=10)
10
>>> str(w[0].message)
'mean_ci(bootstrap=) is deprecated and will be removed in 0.4: use mean_ci(n_resamples=)'
"""

from __future__ import annotations

import functools
import inspect
import types
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

from rubrictools.stack import user_stacklevel

__all__ = [
    "REMOVED_IN",
    "Adapter",
    "RubricToolsDeprecationWarning",
    "adapted",
    "moved_last",
    "renamed",
    "warn_deprecated",
]

REMOVED_IN = "0.4"
"""The release in which the old names stop working."""

F = TypeVar("F", bound=Callable[..., Any])
Adapter = Callable[[str, tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]]
"""``(function name, args, kwargs) -> (args, kwargs)``: rewrites an old-style call (and warns)."""


class RubricToolsDeprecationWarning(FutureWarning):
    """A rubrictools name or calling style that will be removed; the message names what replaces it."""


def warn_deprecated(message: str, *, also: tuple[str, ...] = ()) -> None:
    """Warn that something is deprecated (``message`` says what to use instead); the warning
    points at the user's line (:func:`rubrictools.stack.user_stacklevel`)."""
    warnings.warn(message, RubricToolsDeprecationWarning, stacklevel=user_stacklevel(also=also))


def renamed(**old_to_new: str) -> Adapter:
    """An adapter that accepts each old keyword under its new name, warning once per call.

    Passing both the old and the new name is an error naming both.
    """

    def adapt(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        for old, new in old_to_new.items():
            if old not in kwargs:
                continue
            if new in kwargs:
                raise TypeError(f"{name}() got both {old}= (deprecated) and {new}=; pass only {new}=")
            warn_deprecated(f"{name}({old}=) is deprecated and will be removed in {REMOVED_IN}: use {name}({new}=)")
            kwargs[new] = kwargs.pop(old)
        return args, kwargs

    return adapt


def moved_last(param: str, looks_like: Callable[[Any], bool]) -> Adapter:
    """An adapter for a parameter that was first and is now a keyword after the data
    (``rubric_report(rubric, verdicts, human)`` -> ``rubric_report(verdicts, human, rubric)``):
    a call whose first positional argument ``looks_like`` the old one is rewritten, with a warning."""

    def adapt(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if not args or not looks_like(args[0]) or param in kwargs:
            return args, kwargs
        warn_deprecated(
            f"{name}({param}, ...) with the {param} first is deprecated and will be removed in {REMOVED_IN}: "
            f"the data comes first, as in rt.agreement; pass {param}= (or put it after the data)"
        )
        return args[1:], {**kwargs, param: args[0]}

    return adapt


def adapted(*adapters: Adapter) -> Callable[[F], F]:
    """Decorate a public function so that old-style calls are rewritten by ``adapters`` (in order)."""

    def decorate(fn: F) -> F:
        name = fn.__name__
        if inspect.iscoroutinefunction(fn):

            async def template_async(*args: Any, **kwargs: Any) -> Any:
                for adapt in adapters:
                    args, kwargs = adapt(name, args, kwargs)
                return await fn(*args, **kwargs)

            template: Callable[..., Any] = template_async
        else:

            def template_sync(*args: Any, **kwargs: Any) -> Any:
                for adapt in adapters:
                    args, kwargs = adapt(name, args, kwargs)
                return fn(*args, **kwargs)

            template = template_sync
        # The template reads only its closure (fn, adapters, name), so it can run with the
        # decorated module's globals: doctest then finds the docstring example in that module.
        code = template.__code__
        wrapper = types.FunctionType(code, fn.__globals__, name, None, template.__closure__)
        functools.update_wrapper(wrapper, fn)
        return cast(F, wrapper)

    return decorate

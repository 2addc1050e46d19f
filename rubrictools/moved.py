"""Modules that moved in the 0.2 layout keep working under their old names, with a warning.

``import rubrictools.reliability`` (or ``from rubrictools.batching import BatchJob``) imports
the module's new home and warns once; private names of the old modules are not carried over.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

__all__ = ["MOVED", "install"]

MOVED: dict[str, str] = {
    "rubrictools.reliability": "rubrictools.human_agreement",
    "rubrictools.scoring": "rubrictools.rubric.scoring",
    "rubrictools.linting": "rubrictools.rubric.linter",
    "rubrictools.interop": "rubrictools.rubric",
    "rubrictools.rules": "rubrictools.grading.rules",
    "rubrictools.streaming": "rubrictools.grading.streaming",
    "rubrictools.batching": "rubrictools.grading.batch",
    "rubrictools.ensembling": "rubrictools.grading.ensembles",
    "rubrictools.quality": "rubrictools.diagnostics.report",
    "rubrictools.improvement": "rubrictools.diagnostics.rewrite",
    "rubrictools.calibrate": "rubrictools.calibration",
    "rubrictools.ray": "rubrictools.grading.ray",
    "rubrictools.judge.client": "rubrictools.judge.transport",
    "rubrictools.judge.aggregate": "rubrictools.grading.votes",
    "rubrictools.metrics.calibration": "rubrictools.metrics.probability",
    "rubrictools.widgets.calibration": "rubrictools.widgets.adjudication",
}
"""Old module name -> new module name."""

QUIET = frozenset({"rubrictools.calibrate", "rubrictools.ray"})
"""Old names that stay public spellings (``rt.calibrate``, ``rt.ray``): no warning."""


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        if spec.name not in QUIET:
            warnings.warn(f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=3)
        target = importlib.import_module(new)
        alias = ModuleType(spec.name, target.__doc__)
        alias.__getattr__ = lambda name: getattr(target, name)  # type: ignore[method-assign]  # PEP 562 forwarder
        alias.__dir__ = lambda: dir(target)  # type: ignore[method-assign]  # PEP 562 forwarder
        alias.__dict__["__all__"] = list(getattr(target, "__all__", ()))
        return alias

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the alias forwards every attribute to the module's new home."""


_FINDER = _Alias()


def install() -> None:
    """Make the old module names importable (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
